//! The JSON-RPC calls a probe makes: what each request says ([`Method`]), and how much of an
//! answer a probe reads ([`MAX_BODY`]).

/// The most response body a probe reads, in bytes.
///
/// For `eth_blockNumber` and `eth_chainId` one byte more is a failure
/// ([`ProbeError::BodyTooLarge`](crate::ProbeError::BodyTooLarge)). The
/// [head-with-hash](crate::MonitorBuilder::head_with_hash) probe's answer, a block, is often
/// larger: it reads this many bytes at most and takes the head from them
/// ([`parse_head_response`](crate::parse_head_response)).
pub const MAX_BODY: usize = 4096;

/// The JSON-RPC methods a probe calls. Each has a fixed request id, so a response can be
/// matched to its request even by a provider that answers from a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    /// `eth_blockNumber`, the head probe sent in every check by default.
    BlockNumber,
    /// `eth_getBlockByNumber("latest", false)`, the head probe sent in every check instead of
    /// `eth_blockNumber` with [`head_with_hash`](crate::MonitorBuilder::head_with_hash).
    BlockByNumber,
    /// `eth_chainId`, sent only when an expected chain id is configured, until verified.
    ChainId,
}

impl Method {
    /// The method name, as sent and as shown in errors.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::BlockNumber => "eth_blockNumber",
            Method::BlockByNumber => "eth_getBlockByNumber",
            Method::ChainId => "eth_chainId",
        }
    }

    /// The JSON-RPC `id` of the request; the response must carry the same number.
    pub(crate) fn request_id(self) -> u64 {
        match self {
            // One head probe per check, whichever it is: both use id 1.
            Method::BlockNumber | Method::BlockByNumber => 1,
            Method::ChainId => 2,
        }
    }

    /// The complete JSON-RPC 2.0 request body.
    pub(crate) fn request_body(self) -> &'static str {
        match self {
            Method::BlockNumber => r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#,
            Method::BlockByNumber => {
                r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#
            }
            Method::ChainId => r#"{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]}"#,
        }
    }
}

/// The head probe of a spawned monitor, one HTTP request: a JSON-RPC batch of `eth_chainId`
/// (id 2) and `eth_getBlockByNumber("latest", false)` (id 1), the chain id first so that its
/// short answer comes before the block's long one.
pub(crate) const HEAD_BATCH_BODY: &str = concat!(
    r#"[{"jsonrpc":"2.0","id":2,"method":"eth_chainId","params":[]},"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}]"#
);
