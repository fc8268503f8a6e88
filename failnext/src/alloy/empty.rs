//! Empty answers judged against what the provider has: `null` for a block, a transaction or a
//! receipt, and `[]` for logs, are what a provider answers for what it has not got yet. Near the
//! tip that is the common case (a provider a block behind another is asked for the newest
//! block's receipt), so such an answer counts only from a provider whose known head (the
//! paired monitor's, projected; or the application's, from
//! [`monotonic_reads`](super::FailoverTransportBuilder::monotonic_reads)) has reached the block in
//! question. From one behind it, the read fails over to the others; it returns `null`/`[]` only
//! when every provider that has the block says so (the loop returns the last empty answer when
//! nothing else is left).
//!
//! The block in question is the one the call names (`eth_getBlockByNumber`,
//! `eth_getBlockReceipts`, `eth_getLogs`'s `toBlock`), and for a lookup by hash
//! (`eth_getTransactionReceipt`, `eth_getTransactionByHash`, `eth_getBlockByHash`, `eth_getLogs`
//! up to `latest`) the best head known: the transaction may be in the newest block. A provider
//! whose head is unknown is believed. Looked at only when an answer is empty: the healthy path
//! parses nothing more.

use alloy_json_rpc::RequestPacket;
use serde_json::value::RawValue;

use super::block::{BlockParam, params, quantity};

/// What an empty answer to `packet` (a single call) must have been asked of: a block, or the
/// tip. `None` for any other method, or a block the call does not name by number.
pub(crate) fn asked(packet: &RequestPacket) -> Option<Asked> {
    let RequestPacket::Single(req) = packet else { return None };
    match req.method() {
        "eth_getBlockByNumber" | "eth_getBlockReceipts" => match first_param(req)? {
            BlockParam::Number(n) => Some(Asked::Block(n)),
            BlockParam::Latest | BlockParam::Absent => Some(Asked::Tip),
            _ => None,
        },
        "eth_getTransactionReceipt" | "eth_getTransactionByHash" | "eth_getBlockByHash" => Some(Asked::Tip),
        "eth_getLogs" => {
            let [filter]: [&RawValue; 1] = params(req)?;
            logs_asked(filter)
        }
        _ => None,
    }
}

/// The first parameter of `req`, read as a block parameter.
fn first_param(req: &alloy_json_rpc::SerializedRequest) -> Option<BlockParam> {
    let params: Vec<&RawValue> = params(req)?;
    Some(BlockParam::parse(params.first().copied()))
}

/// The block a logs filter reaches: its `toBlock` when a number, the tip when it is `latest`
/// or absent; `None` for a `blockHash` filter (its block is named by hash: the provider says
/// whether it knows it) and for anything else.
fn logs_asked(filter: &RawValue) -> Option<Asked> {
    #[derive(serde::Deserialize)]
    struct Filter<'a> {
        #[serde(rename = "toBlock", borrow)]
        to: Option<&'a str>,
        #[serde(rename = "blockHash", borrow)]
        hash: Option<&'a RawValue>,
    }
    let filter: Filter<'_> = serde_json::from_str(filter.get()).ok()?;
    if filter.hash.is_some() {
        return None;
    }
    match filter.to {
        None | Some("latest") => Some(Asked::Tip),
        Some(text) => quantity(text).map(Asked::Block),
    }
}

/// What an empty answer was asked of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Asked {
    /// Block `n`: a provider below it has not got it.
    Block(u64),
    /// The newest block: a provider below the best head known may not have it.
    Tip,
}

impl Asked {
    /// The block a provider must have reached for its empty answer to count, given the best
    /// head known (`None`: unknown, and nothing is required of a lookup at the tip).
    pub(crate) fn needs(self, best: Option<u64>) -> Option<u64> {
        match self {
            Asked::Block(n) => Some(n),
            Asked::Tip => best,
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_json_rpc::{Id, Request, SerializedRequest};

    use super::*;

    fn single(method: &'static str, params: serde_json::Value) -> RequestPacket {
        let req: SerializedRequest = Request::new(method, Id::Number(1), params).try_into().unwrap();
        RequestPacket::Single(req)
    }

    #[test]
    fn the_block_an_empty_answer_was_asked_of_is_the_one_the_call_names_else_the_tip() {
        let by_number = single("eth_getBlockByNumber", serde_json::json!(["0x10", false]));
        assert_eq!(asked(&by_number), Some(Asked::Block(16)));
        assert_eq!(asked(&single("eth_getBlockReceipts", serde_json::json!(["latest"]))), Some(Asked::Tip));
        let receipt =
            single("eth_getTransactionReceipt", serde_json::json!([format!("0x{}", "ab".repeat(32))]));
        assert_eq!(asked(&receipt), Some(Asked::Tip));
        let logs = single("eth_getLogs", serde_json::json!([{"fromBlock": "0x1", "toBlock": "0x20"}]));
        assert_eq!(asked(&logs), Some(Asked::Block(32)));
        assert_eq!(
            asked(&single("eth_getLogs", serde_json::json!([{"fromBlock": "0x1"}]))),
            Some(Asked::Tip)
        );
        let pinned =
            single("eth_getLogs", serde_json::json!([{"blockHash": format!("0x{}", "cd".repeat(32))}]));
        assert_eq!(asked(&pinned), None, "a hash filter: the provider says whether it knows the block");
        assert_eq!(asked(&single("eth_call", serde_json::json!([{}, "latest"]))), None);
        assert_eq!(asked(&single("eth_getBlockByNumber", serde_json::json!(["finalized", false]))), None);
    }

    #[test]
    fn a_lookup_at_the_tip_needs_the_best_head_and_a_named_block_itself() {
        assert_eq!(Asked::Tip.needs(Some(100)), Some(100));
        assert_eq!(Asked::Tip.needs(None), None);
        assert_eq!(Asked::Block(7).needs(Some(100)), Some(7));
    }
}
