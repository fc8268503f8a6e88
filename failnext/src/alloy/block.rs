//! Blocks as the transport names them: a block by number and hash ([`BlockRef`]), the block
//! parameters of the state reads (where each method takes one, what a parameter names), and
//! the EIP-1898 form a bundle rewrites it to.

use std::fmt;

use alloy_json_rpc::SerializedRequest;
use alloy_primitives::B256;
use serde::Deserialize;
use serde_json::value::RawValue;

/// A block by number and hash: a [`Bundle`](super::Bundle)'s reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockRef {
    /// Its number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
}

impl BlockRef {
    /// The block `number` whose hash is `hash`.
    pub const fn new(number: u64, hash: B256) -> BlockRef {
        BlockRef { number, hash }
    }
}

impl fmt::Display for BlockRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} ({})", self.number, self.hash)
    }
}

/// Where `method` takes its block parameter (0-based), for the state reads that take one
/// (its absence means `latest`).
pub(crate) fn block_index(method: &str) -> Option<usize> {
    match method {
        "eth_getBalance"
        | "eth_getCode"
        | "eth_getTransactionCount"
        | "eth_call"
        | "eth_estimateGas"
        | "eth_createAccessList"
        | "eth_simulateV1"
        | "eth_getAccount"
        | "eth_getAccountInfo"
        | "debug_traceCall" => Some(1),
        "eth_getStorageAt" | "eth_getProof" => Some(2),
        _ => None,
    }
}

/// What a block parameter names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockParam {
    /// Absent or `null`: the latest block.
    Absent,
    /// `"latest"`.
    Latest,
    /// `"pending"`.
    Pending,
    /// `"safe"` or `"finalized"`: a block the node chooses, other than its latest.
    Moving,
    /// A number (`"0x10"`, `{"blockNumber": "0x10"}`; `"earliest"` is 0).
    Number(u64),
    /// A hash (`{"blockHash": ..}`, or a bare 32-byte hex string).
    Hash(B256),
    /// Anything else: left to the node.
    Other,
}

impl BlockParam {
    /// Reads one parameter (`None`: absent).
    pub(crate) fn parse(raw: Option<&RawValue>) -> BlockParam {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form<'a> {
            Text(&'a str),
            Object {
                #[serde(rename = "blockHash")]
                hash: Option<B256>,
                #[serde(rename = "blockNumber")]
                number: Option<&'a str>,
            },
        }
        let Some(raw) = raw else { return BlockParam::Absent };
        if raw.get() == "null" {
            return BlockParam::Absent;
        }
        match serde_json::from_str::<Form<'_>>(raw.get()) {
            Ok(Form::Text("latest")) => BlockParam::Latest,
            Ok(Form::Text("pending")) => BlockParam::Pending,
            Ok(Form::Text("safe" | "finalized")) => BlockParam::Moving,
            Ok(Form::Text("earliest")) => BlockParam::Number(0),
            Ok(Form::Text(text)) if text.len() == 66 => {
                text.parse().map_or(BlockParam::Other, BlockParam::Hash)
            }
            Ok(Form::Text(text)) => quantity(text).map_or(BlockParam::Other, BlockParam::Number),
            Ok(Form::Object { hash: Some(hash), number: None }) => BlockParam::Hash(hash),
            Ok(Form::Object { hash: None, number: Some(n) }) => {
                quantity(n).map_or(BlockParam::Other, BlockParam::Number)
            }
            _ => BlockParam::Other,
        }
    }

    /// The block parameter of `req`, if its method takes one (`None` otherwise, or when its
    /// params are not a list).
    pub(crate) fn of(req: &SerializedRequest) -> Option<BlockParam> {
        let index = block_index(req.method())?;
        let params: Vec<&RawValue> = params(req)?;
        Some(BlockParam::parse(params.get(index).copied()))
    }
}

/// The call's `params`, parsed as `T` (which may borrow from the request); `None` when absent
/// or not a `T`.
pub(crate) fn params<'r, T: Deserialize<'r>>(req: &'r SerializedRequest) -> Option<T> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        params: Option<&'a RawValue>,
    }
    let Params { params } = serde_json::from_str(req.serialized().get()).ok()?;
    serde_json::from_str(params?.get()).ok()
}

/// A JSON-RPC quantity (`0x` and hex digits) as a number.
pub(crate) fn quantity(text: &str) -> Option<u64> {
    crate::quantity::parse_lenient(text).ok()
}

/// The EIP-1898 parameter that selects block `hash`, canonical only.
pub(crate) fn by_hash(hash: &B256) -> Option<Box<RawValue>> {
    RawValue::from_string(format!(r#"{{"blockHash":"{hash}","requireCanonical":true}}"#)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> BlockParam {
        let raw = RawValue::from_string(text.to_owned()).unwrap();
        BlockParam::parse(Some(&raw))
    }

    #[test]
    fn every_form_of_a_block_parameter_is_read() {
        let h = B256::repeat_byte(0xab);
        assert_eq!(BlockParam::parse(None), BlockParam::Absent);
        assert_eq!(parse("null"), BlockParam::Absent);
        assert_eq!(parse(r#""latest""#), BlockParam::Latest);
        assert_eq!(parse(r#""pending""#), BlockParam::Pending);
        assert_eq!(parse(r#""finalized""#), BlockParam::Moving);
        assert_eq!(parse(r#""earliest""#), BlockParam::Number(0));
        assert_eq!(parse(r#""0x1b4""#), BlockParam::Number(0x1b4));
        assert_eq!(parse(r#"{"blockNumber":"0x10"}"#), BlockParam::Number(16));
        assert_eq!(parse(&format!(r#"{{"blockHash":"{h}","requireCanonical":false}}"#)), BlockParam::Hash(h));
        assert_eq!(parse(&format!(r#""{h}""#)), BlockParam::Hash(h));
        assert_eq!(parse(r#""soon""#), BlockParam::Other);
        assert_eq!(parse("7"), BlockParam::Other);
    }

    #[test]
    fn the_eip_1898_form_names_the_hash_and_requires_it_canonical() {
        let h = B256::repeat_byte(1);
        let raw = by_hash(&h).unwrap();
        let v: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(v, serde_json::json!({"blockHash": h, "requireCanonical": true}));
        assert_eq!(BlockParam::parse(Some(&raw)), BlockParam::Hash(h));
    }
}
