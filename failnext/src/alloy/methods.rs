//! [`MethodTable`]: how each JSON-RPC method may be sent.

use std::collections::HashMap;
use std::sync::Arc;

/// How one JSON-RPC method may be sent, as [`MethodTable`] says.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// A read: safe to send again to another provider, so it may fail over.
    Read,
    /// A write or a signing call (or a method the table does not know): it reaches at most one
    /// provider.
    Write,
    /// Creates a filter (`eth_newFilter`, ...): a read that may fail over; the provider that
    /// answers keeps the filter, so the transport remembers the filter id there.
    NewFilter,
    /// Uses a filter (`eth_getFilterChanges`, ...): sent only to the provider that created it.
    UseFilter,
}

/// Which JSON-RPC methods may fail over, which never do, and which are pinned to a filter's
/// provider. Cheap to clone (shared).
///
/// The default table ([`MethodTable::new`]):
///
/// | access | methods |
/// | --- | --- |
/// | [`Write`](Access::Write) (never fails over) | `eth_sendRawTransaction`, `eth_sendTransaction`, `eth_sendRawTransactionSync`, `eth_sendTransactionSync`, `eth_sendRawTransactionConditional`, `eth_sendBundle`, `eth_sendPrivateTransaction`, `eth_sendPrivateRawTransaction`, `eth_cancelPrivateTransaction`, `eth_sign`, `eth_signTransaction`, `eth_signTypedData` (and `_v1`, `_v3`, `_v4`), every `personal_*`, `eth_submitWork`, `eth_submitHashrate`, `eth_subscribe`, `eth_unsubscribe`; and every method the table does not know |
/// | [`Read`](Access::Read) (fails over) | every `eth_get*` method not listed below, `eth_blockNumber`, `eth_call`, `eth_callMany`, `eth_simulateV1`, `eth_chainId`, `eth_estimateGas`, `eth_createAccessList`, `eth_gasPrice`, `eth_maxPriorityFeePerGas`, `eth_blobBaseFee`, `eth_feeHistory`, `eth_syncing`, `eth_protocolVersion`, `eth_accounts`, `eth_coinbase`, `eth_mining`, `eth_hashrate`, `net_version`, `net_listening`, `net_peerCount`, `web3_clientVersion`, `web3_sha3`, `trace_*` and `debug_trace*` reads |
/// | [`NewFilter`](Access::NewFilter) | `eth_newFilter`, `eth_newBlockFilter`, `eth_newPendingTransactionFilter` |
/// | [`UseFilter`](Access::UseFilter) | `eth_getFilterChanges`, `eth_getFilterLogs`, `eth_uninstallFilter` |
///
/// A method the table does not know does not fail over ([`MethodTable::unknown`] changes
/// that). [`MethodTable::set`] overrides one method, e.g. a provider's own read:
///
/// ```
/// use failnext::alloy::{Access, MethodTable};
///
/// let table = MethodTable::new().set("alchemy_getAssetTransfers", Access::Read);
/// assert_eq!(table.access("alchemy_getAssetTransfers"), Access::Read);
/// assert_eq!(table.access("eth_sendRawTransaction"), Access::Write);
/// assert_eq!(table.access("eth_getBalance"), Access::Read);
/// assert_eq!(table.access("my_customMethod"), Access::Write);
/// ```
#[derive(Clone, Debug)]
pub struct MethodTable {
    overrides: Arc<HashMap<String, Access>>,
    unknown: Access,
}

impl Default for MethodTable {
    fn default() -> Self {
        MethodTable::new()
    }
}

impl MethodTable {
    /// The default table (see the type's documentation).
    pub fn new() -> MethodTable {
        MethodTable { overrides: Arc::new(HashMap::new()), unknown: Access::Write }
    }

    /// Sets how `method` is sent, over the default table.
    #[must_use]
    pub fn set(mut self, method: impl Into<String>, access: Access) -> MethodTable {
        Arc::make_mut(&mut self.overrides).insert(method.into(), access);
        self
    }

    /// Sets how a method neither overridden nor in the default table is sent (default:
    /// [`Access::Write`], no failover).
    #[must_use]
    pub fn unknown(mut self, access: Access) -> MethodTable {
        self.unknown = access;
        self
    }

    /// How `method` is sent.
    pub fn access(&self, method: &str) -> Access {
        if let Some(access) = self.overrides.get(method) {
            return *access;
        }
        default_access(method).unwrap_or(self.unknown)
    }
}

/// The default table; `None` for a method it does not know.
fn default_access(method: &str) -> Option<Access> {
    let access = match method {
        "eth_newFilter" | "eth_newBlockFilter" | "eth_newPendingTransactionFilter" => Access::NewFilter,
        "eth_getFilterChanges" | "eth_getFilterLogs" | "eth_uninstallFilter" => Access::UseFilter,
        "eth_sendRawTransaction"
        | "eth_sendTransaction"
        | "eth_sendRawTransactionSync"
        | "eth_sendTransactionSync"
        | "eth_sendRawTransactionConditional"
        | "eth_sendBundle"
        | "eth_sendPrivateTransaction"
        | "eth_sendPrivateRawTransaction"
        | "eth_cancelPrivateTransaction"
        | "eth_sign"
        | "eth_signTransaction"
        | "eth_signTypedData"
        | "eth_signTypedData_v1"
        | "eth_signTypedData_v3"
        | "eth_signTypedData_v4"
        | "eth_submitWork"
        | "eth_submitHashrate"
        | "eth_subscribe"
        | "eth_unsubscribe" => Access::Write,
        m if m.starts_with("personal_") => Access::Write,
        "eth_blockNumber"
        | "eth_call"
        | "eth_callMany"
        | "eth_simulateV1"
        | "eth_chainId"
        | "eth_estimateGas"
        | "eth_createAccessList"
        | "eth_gasPrice"
        | "eth_maxPriorityFeePerGas"
        | "eth_blobBaseFee"
        | "eth_feeHistory"
        | "eth_syncing"
        | "eth_protocolVersion"
        | "eth_accounts"
        | "eth_coinbase"
        | "eth_mining"
        | "eth_hashrate"
        | "net_version"
        | "net_listening"
        | "net_peerCount"
        | "web3_clientVersion"
        | "web3_sha3" => Access::Read,
        m if m.starts_with("eth_get") => Access::Read,
        m if m.starts_with("trace_") && !matches!(m, "trace_rawTransaction" | "trace_sendRawTransaction") => {
            Access::Read
        }
        m if m.starts_with("debug_trace") => Access::Read,
        _ => return None,
    };
    Some(access)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_signing_never_fail_over_and_reads_do() {
        let t = MethodTable::new();
        for m in
            ["eth_sendRawTransaction", "eth_sendRawTransactionSync", "eth_signTypedData_v4", "personal_sign"]
        {
            assert_eq!(t.access(m), Access::Write, "{m}");
        }
        for m in ["eth_getBalance", "eth_call", "eth_blockNumber", "eth_getTransactionReceipt", "trace_block"]
        {
            assert_eq!(t.access(m), Access::Read, "{m}");
        }
        assert_eq!(t.access("eth_getFilterChanges"), Access::UseFilter, "not an eth_get* read");
        assert_eq!(t.access("eth_newBlockFilter"), Access::NewFilter);
    }

    #[test]
    fn an_unknown_method_does_not_fail_over_unless_the_table_says_so() {
        assert_eq!(MethodTable::new().access("foo_bar"), Access::Write);
        assert_eq!(MethodTable::new().unknown(Access::Read).access("foo_bar"), Access::Read);
        let t = MethodTable::new().set("eth_call", Access::Write);
        assert_eq!(t.access("eth_call"), Access::Write, "an override wins over the default");
    }
}
