//! Verified blocks: a block read by number or by hash (`eth_getBlockByNumber`,
//! `eth_getBlockByHash`) is an answer only when its header hashes to the hash it claims
//! (alloy's own header hashing: the Keccak-256 of the RLP header), that hash is the one asked
//! for, and its number the one asked for.
//!
//! A block that fails is not an answer: its provider is put off the chain (found to lack
//! [`Capability::TrueBlocks`](super::Capability::TrueBlocks), so that every read skips it for the
//! transport's lack period), told as [`Event::ForgedBlock`](crate::Event::ForgedBlock), and the
//! read goes to the next provider. A chain whose headers do not hash this way (some L2s) is
//! found at the first block that fails: another provider is asked for the same block, and
//! when its block fails the same way the check is off for the transport, told once as
//! [`Event::BlocksUnverifiable`](crate::Event::BlocksUnverifiable). A chain's format never
//! fails a read; with one provider its word is taken.

use std::sync::atomic::{AtomicU8, Ordering};

use alloy_json_rpc::{RequestPacket, ResponsePacket, ResponsePayload, SerializedRequest};
use alloy_primitives::B256;
use serde_json::value::RawValue;

use super::block::{BlockParam, params};

/// Whether the chain's headers hash as Ethereum's: not known yet, yes, or no.
#[derive(Debug, Default)]
pub(crate) struct BlockCheck(AtomicU8);

const UNKNOWN: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// What the check of an answer's blocks found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// No block to check, or the check is off.
    Nothing,
    /// Every block checked hashes to its hash and is the one asked for.
    Verified,
    /// A block whose header does not hash to the hash it claims: a forgery, or a chain whose
    /// headers do not hash this way.
    Unhashed(Option<u64>),
    /// A block that hashes to its hash but is not the block asked for (another hash or
    /// number): a forgery on any chain.
    NotAsked(Option<u64>),
}

impl BlockCheck {
    /// Whether the check is off (the chain's headers were found not to hash this way).
    pub(crate) fn is_off(&self) -> bool {
        self.0.load(Ordering::Relaxed) == OFF
    }

    /// Whether the chain's headers are known to hash this way (a block verified).
    pub(crate) fn is_on(&self) -> bool {
        self.0.load(Ordering::Relaxed) == ON
    }

    /// A block verified: the chain's headers hash this way.
    pub(crate) fn verified(&self) {
        let _ = self.0.compare_exchange(UNKNOWN, ON, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Two providers' blocks failed the same way: the check goes off. `true` the first time.
    pub(crate) fn turn_off(&self) -> bool {
        self.0.swap(OFF, Ordering::Relaxed) != OFF
    }

    /// The blocks of `answer` to the calls of `packet`, checked (nothing when the check is
    /// off or no call reads a block).
    pub(crate) fn check(&self, packet: &RequestPacket, answer: &ResponsePacket) -> Found {
        if self.is_off() {
            return Found::Nothing;
        }
        let found = check(packet, answer);
        if found == Found::Verified {
            self.verified();
        }
        found
    }
}

/// What a block call asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    Number(u64),
    Hash(B256),
    /// A tag (`latest`, `safe`, ...): any block, checked against its own hash only.
    Any,
}

/// The block `req` reads, if it reads one by number or hash.
fn asked(req: &SerializedRequest) -> Option<Asked> {
    match req.method() {
        "eth_getBlockByNumber" => {
            let params: Vec<&RawValue> = params(req)?;
            Some(match BlockParam::parse(params.first().copied()) {
                BlockParam::Number(n) => Asked::Number(n),
                _ => Asked::Any,
            })
        }
        "eth_getBlockByHash" => {
            let params: Vec<&RawValue> = params(req)?;
            let hash = serde_json::from_str::<B256>(params.first()?.get()).ok()?;
            Some(Asked::Hash(hash))
        }
        _ => None,
    }
}

/// The check of every block call's result in `answer` (a batch's answers matched to its calls
/// by id); the first failure found, else whether any block was verified.
pub(crate) fn check(packet: &RequestPacket, answer: &ResponsePacket) -> Found {
    let requests = packet.requests();
    if !requests.iter().any(|r| matches!(r.method(), "eth_getBlockByNumber" | "eth_getBlockByHash")) {
        return Found::Nothing;
    }
    let responses: &[alloy_json_rpc::Response] = match answer {
        ResponsePacket::Single(r) => std::slice::from_ref(r),
        ResponsePacket::Batch(rs) => rs,
    };
    let mut found = Found::Nothing;
    for req in requests {
        let Some(asked) = asked(req) else { continue };
        let Some(response) = responses.iter().find(|r| r.id == *req.id()) else { continue };
        let ResponsePayload::Success(result) = &response.payload else { continue };
        match block(result, asked) {
            Found::Nothing => {}
            Found::Verified => found = Found::Verified,
            failed => return failed,
        }
    }
    found
}

/// The check of one block (`null`, or a result that is no header, claims nothing: nothing).
fn block(result: &RawValue, asked: Asked) -> Found {
    if result.get() == "null" {
        return Found::Nothing;
    }
    let Ok(header) = serde_json::from_str::<alloy_rpc_types_eth::Header>(result.get()) else {
        return Found::Nothing;
    };
    let number = Some(header.inner.number);
    if header.inner.hash_slow() != header.hash {
        return Found::Unhashed(number);
    }
    match asked {
        Asked::Number(n) if n != header.inner.number => Found::NotAsked(number),
        Asked::Hash(h) if h != header.hash => Found::NotAsked(number),
        _ => Found::Verified,
    }
}

#[cfg(test)]
mod tests {
    use alloy_json_rpc::{Id, Request, Response};
    use serde_json::json;

    use super::*;

    fn header(number: u64) -> alloy_rpc_types_eth::Header {
        let inner = alloy_consensus::Header {
            number,
            gas_limit: 30_000_000,
            timestamp: 1_700_000_000 + number,
            ..Default::default()
        };
        alloy_rpc_types_eth::Header::new(inner)
    }

    fn packet(method: &'static str, params: serde_json::Value) -> RequestPacket {
        RequestPacket::Single(Request::new(method, Id::Number(1), params).serialize().unwrap())
    }

    fn answer(result: serde_json::Value) -> ResponsePacket {
        let raw = RawValue::from_string(result.to_string()).unwrap();
        ResponsePacket::Single(Response { id: Id::Number(1), payload: ResponsePayload::Success(raw) })
    }

    #[test]
    fn a_block_whose_header_hashes_to_its_hash_and_is_the_one_asked_is_verified() {
        let h = header(7);
        let by_number = packet("eth_getBlockByNumber", json!(["0x7", false]));
        assert_eq!(check(&by_number, &answer(serde_json::to_value(&h).unwrap())), Found::Verified);
        let by_hash = packet("eth_getBlockByHash", json!([h.hash, false]));
        assert_eq!(check(&by_hash, &answer(serde_json::to_value(&h).unwrap())), Found::Verified);
        let latest = packet("eth_getBlockByNumber", json!(["latest", false]));
        assert_eq!(check(&latest, &answer(serde_json::to_value(&h).unwrap())), Found::Verified);
    }

    #[test]
    fn a_block_with_a_rewritten_hash_is_unhashed_and_another_block_than_asked_is_not_asked() {
        let mut forged = serde_json::to_value(header(7)).unwrap();
        forged["hash"] = json!(B256::repeat_byte(0x11));
        let by_number = packet("eth_getBlockByNumber", json!(["0x7", false]));
        assert_eq!(check(&by_number, &answer(forged)), Found::Unhashed(Some(7)));
        let other = serde_json::to_value(header(8)).unwrap();
        assert_eq!(check(&by_number, &answer(other.clone())), Found::NotAsked(Some(8)));
        let by_hash = packet("eth_getBlockByHash", json!([header(7).hash, false]));
        assert_eq!(check(&by_hash, &answer(other)), Found::NotAsked(Some(8)));
    }

    #[test]
    fn null_other_methods_and_results_that_are_no_header_claim_nothing() {
        let by_number = packet("eth_getBlockByNumber", json!(["0x7", false]));
        assert_eq!(check(&by_number, &answer(json!(null))), Found::Nothing);
        assert_eq!(check(&by_number, &answer(json!({"number": "0x7"}))), Found::Nothing);
        let balance =
            packet("eth_getBalance", json!(["0x0000000000000000000000000000000000000000", "latest"]));
        assert_eq!(check(&balance, &answer(json!("0x1"))), Found::Nothing);
    }

    /// Real blocks, verbatim from public sources (`tests/corpus/blocks/SOURCES.md`): each one
    /// verifies; with one header field changed and its hash kept, it no longer does.
    #[test]
    fn real_blocks_of_mainnet_a_testnet_and_two_l2s_verify_and_a_changed_field_does_not() {
        let blocks = [
            include_str!("../../tests/corpus/blocks/mainnet-19449567-cancun.json"),
            include_str!("../../tests/corpus/blocks/mainnet-11117104-prelondon.json"),
            include_str!("../../tests/corpus/blocks/base-mainnet-29139628.json"),
            include_str!("../../tests/corpus/blocks/op-goerli-8381743.json"),
            include_str!("../../tests/corpus/blocks/sepolia-8324337-prague.json"),
            include_str!("../../tests/corpus/blocks/devnet-prague-789-header.json"),
        ];
        for text in blocks {
            let raw = RawValue::from_string(text.trim().to_owned()).unwrap();
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let number =
                u64::from_str_radix(value["number"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            assert_eq!(block(&raw, Asked::Any), Found::Verified, "block {number}");
            assert_eq!(block(&raw, Asked::Number(number)), Found::Verified, "block {number}");
            let mut changed = value.clone();
            changed["gasUsed"] = json!("0x1");
            let changed = RawValue::from_string(changed.to_string()).unwrap();
            assert_eq!(block(&changed, Asked::Any), Found::Unhashed(Some(number)), "block {number}");
        }
    }

    #[test]
    fn the_check_turns_on_at_a_verified_block_and_stays_off_once_turned_off() {
        let check = BlockCheck::default();
        assert!(!check.is_on() && !check.is_off());
        let by_number = packet("eth_getBlockByNumber", json!(["0x7", false]));
        let good = answer(serde_json::to_value(header(7)).unwrap());
        assert_eq!(check.check(&by_number, &good), Found::Verified);
        assert!(check.is_on());
        assert!(check.turn_off());
        assert!(!check.turn_off(), "told once");
        assert_eq!(check.check(&by_number, &good), Found::Nothing);
    }
}
