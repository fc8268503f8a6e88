//! The liar scenario's chain and its providers: honest (possibly flapping), or lying in
//! well-formed ways.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::consensus::{Receipt, ReceiptEnvelope, ReceiptWithBloom};
use alloy::primitives::{Address, B256, Bytes};
use failnext_loopback::{Action, End, Received, Reply, Server};
use serde_json::{Value, json};

/// Blocks on the chain.
pub const BLOCKS: u64 = 16;

/// Every account's balance, in wei.
pub const BALANCE: u64 = 1_000_000_000_000_000_000;

/// The account whose balance is read.
pub const ACCOUNT: &str = "0x00000000000000000000000000000000000000aa";

/// The contract every block's transaction calls; it emits one log.
const EMITS: Address = Address::repeat_byte(0xee);

/// How long each flapping provider is down in turn (then up for three times as long).
pub const FLAP: Duration = Duration::from_millis(100);

/// What a provider lies about: its blocks (one header field changed, the hash kept), its
/// state (a balance one wei more, `null` for a mined transaction's receipt, a receipt for a
/// transaction nobody mined), its logs (the log of every fourth block dropped, a copy of
/// another's added, blooms and headers untouched so that only the receipts root shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lies {
    /// Blocks with one header field changed, the hash kept.
    pub blocks: bool,
    /// Balances one wei more, receipts denied or invented.
    pub state: bool,
    /// Logs dropped and added.
    pub logs: bool,
}

impl Lies {
    /// An honest provider's.
    pub const NONE: Lies = Lies { blocks: false, state: false, logs: false };
}

/// When an honest provider fails, and how.
#[derive(Clone, Copy, Debug)]
pub enum Weather {
    /// Never.
    Fair,
    /// Down (503) during its turn (`0..3`) of a rotation in which each flapping provider is
    /// down for [`FLAP`] and at most one is down at a time (the bench's).
    Turn(u32),
    /// Spells of `spell`, each healthy or one fault, drawn from `seed` and the provider's
    /// number independently of the others (the soak's): half the spells healthy, the others
    /// a 503, a 429 with `Retry-After: 1`, a reset connection, a body cut short, a malformed
    /// body, a JSON-RPC rate-limit error (`-32005`), an internal error (`-32603`), or an answer
    /// 150 ms late. All the honest providers may be failing at once.
    Seeded {
        /// The seed.
        seed: u64,
        /// The provider's number (its draws are its own).
        provider: u64,
        /// How long a spell lasts.
        spell: Duration,
    },
}

/// How late a slow answer comes.
pub const SLOW: Duration = Duration::from_millis(150);

/// The faults a seeded spell may bring ([`Weather::Seeded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// 503.
    Unavailable,
    /// 429 with `Retry-After: 1`.
    RateLimited,
    /// The connection reset, nothing answered.
    Reset,
    /// The body cut short.
    Truncated,
    /// A body that is not JSON.
    Malformed,
    /// A JSON-RPC error `-32005` (limit exceeded).
    LimitExceeded,
    /// A JSON-RPC error `-32603` (internal error).
    Internal,
    /// The right answer, [`SLOW`] late.
    Slow,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 8] = [
        Fault::Unavailable,
        Fault::RateLimited,
        Fault::Reset,
        Fault::Truncated,
        Fault::Malformed,
        Fault::LimitExceeded,
        Fault::Internal,
        Fault::Slow,
    ];
}

/// A 64-bit mix (splitmix64's finalizer): the seeded spells' draws.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Weather {
    /// The fault now, `since` the chain started serving; `None` when healthy.
    pub fn fault(self, since: Instant) -> Option<Fault> {
        match self {
            Weather::Fair => None,
            Weather::Turn(turn) => ((since.elapsed().as_millis() / FLAP.as_millis()) % 4 == u128::from(turn))
                .then_some(Fault::Unavailable),
            Weather::Seeded { seed, provider, spell } => {
                let slot = since.elapsed().as_millis() / spell.as_millis().max(1);
                let draw =
                    mix(seed ^ mix(provider.wrapping_add(1)) ^ mix(u64::try_from(slot).unwrap_or(u64::MAX)));
                let index = usize::try_from(draw >> 33).unwrap_or(0) % Fault::ALL.len();
                (draw & 1 == 1).then_some(Fault::ALL[index])
            }
        }
    }
}

/// Blocks 0..[`BLOCKS`], each header hashed by alloy and linked to its parent, one
/// transaction each (hash `n + 1` as 32 bytes) with one log, its receipt hashed into the
/// header's receipts root and its log into the header's bloom.
#[derive(Debug)]
pub struct Chain {
    blocks: Vec<Value>,
    receipts: Vec<Value>,
    started: Instant,
}

impl Default for Chain {
    fn default() -> Chain {
        Chain::new()
    }
}

impl Chain {
    /// The chain, from now on.
    #[must_use]
    pub fn new() -> Chain {
        let mut parent = B256::ZERO;
        let (mut blocks, mut receipts) = (Vec::new(), Vec::new());
        for number in 0..BLOCKS {
            let log = alloy::primitives::Log::new_unchecked(
                EMITS,
                vec![B256::with_last_byte(1)],
                Bytes::from(number.to_be_bytes().to_vec()),
            );
            let receipt =
                Receipt { status: true.into(), cumulative_gas_used: 21_000, logs: vec![log.clone()] };
            let with_bloom = ReceiptWithBloom::from(receipt);
            let bloom = with_bloom.logs_bloom;
            let envelope = ReceiptEnvelope::Eip1559(with_bloom);
            let inner = alloy::consensus::Header {
                number,
                parent_hash: parent,
                logs_bloom: bloom,
                receipts_root: alloy::consensus::proofs::calculate_receipt_root(std::slice::from_ref(
                    &envelope,
                )),
                gas_limit: 30_000_000,
                gas_used: 21_000,
                timestamp: 1_700_000_000 + 12 * number,
                ..Default::default()
            };
            let header = alloy::rpc::types::Header::new(inner);
            parent = header.hash;
            let tx = Chain::tx_of(number);
            let rpc_log = alloy::rpc::types::Log {
                inner: log,
                block_hash: Some(header.hash),
                block_number: Some(number),
                block_timestamp: None,
                transaction_hash: Some(tx),
                transaction_index: Some(0),
                log_index: Some(0),
                removed: false,
            };
            let rpc = alloy::rpc::types::TransactionReceipt {
                inner: envelope.map_logs(|_| rpc_log.clone()),
                transaction_hash: tx,
                transaction_index: Some(0),
                block_hash: Some(header.hash),
                block_number: Some(number),
                gas_used: 21_000,
                effective_gas_price: 1,
                blob_gas_used: None,
                blob_gas_price: None,
                from: Address::repeat_byte(1),
                to: Some(EMITS),
                contract_address: None,
            };
            receipts.push(serde_json::to_value(rpc).unwrap_or_default());
            let mut block = serde_json::to_value(header).unwrap_or_default();
            block["transactions"] = json!([tx]);
            blocks.push(block);
        }
        Chain { blocks, receipts, started: Instant::now() }
    }

    fn tx_of(n: u64) -> B256 {
        B256::left_padding_from(&(n + 1).to_be_bytes())
    }

    /// Block `n` as the chain has it.
    pub fn block(&self, n: u64) -> Value {
        self.blocks.get(n as usize).cloned().unwrap_or(Value::Null)
    }

    /// Block `n`'s hash.
    pub fn hash(&self, n: u64) -> B256 {
        serde_json::from_value(self.block(n)["hash"].clone()).unwrap_or_default()
    }

    /// Block `n`'s transaction.
    pub fn tx(&self, n: u64) -> B256 {
        Chain::tx_of(n)
    }

    /// A transaction nobody mined.
    pub fn unknown_tx(&self, n: u64) -> B256 {
        B256::left_padding_from(&(1_000_000 + n).to_be_bytes())
    }

    /// The receipt of block `n`'s transaction.
    pub fn receipt(&self, n: u64) -> Value {
        self.receipts.get(n as usize).cloned().unwrap_or(Value::Null)
    }

    /// The receipt as a liar about logs tells it: block `n`'s log dropped when `n % 4 == 1`, a
    /// copy of it added (the next log index) when `n % 4 == 3`.
    fn receipt_told(&self, n: u64, lies: Lies) -> Value {
        let mut receipt = self.receipt(n);
        if lies.logs && n % 4 == 1 {
            receipt["logs"] = json!([]);
        } else if lies.logs && n % 4 == 3 {
            let mut copy = receipt["logs"][0].clone();
            copy["logIndex"] = json!("0x1");
            receipt["logs"].as_array_mut().into_iter().for_each(|logs| logs.push(copy.clone()));
        }
        receipt
    }

    fn number_of(&self, block: &Value) -> Option<u64> {
        if let Some(n) = block.as_str().and_then(|s| u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()) {
            return Some(n).filter(|n| *n < BLOCKS);
        }
        self.blocks.iter().position(|b| b["hash"] == *block).map(|n| n as u64)
    }

    /// What a provider of this chain answers to one call, lying as `lies` says.
    fn answer(&self, method: &str, params: &Value, lies: Lies) -> Value {
        match method {
            "eth_chainId" => json!("0x1"),
            "eth_blockNumber" => json!(format!("{:#x}", BLOCKS - 1)),
            "eth_getBlockByNumber" | "eth_getBlockByHash" => {
                let n = match params[0].as_str() {
                    Some("latest") => Some(BLOCKS - 1),
                    _ => self.number_of(&params[0]),
                };
                let mut block = n.map_or(Value::Null, |n| self.block(n));
                if lies.blocks && !block.is_null() {
                    block["gasUsed"] = json!("0x0");
                }
                block
            }
            "eth_getBalance" => json!(format!("{:#x}", BALANCE + u64::from(lies.state))),
            "eth_getTransactionReceipt" => {
                let asked: Option<B256> = serde_json::from_value(params[0].clone()).ok();
                let mined = (0..BLOCKS).find(|n| Some(Chain::tx_of(*n)) == asked);
                match (mined, lies.state) {
                    (Some(_), true) => Value::Null,
                    (Some(n), false) => self.receipt_told(n, lies),
                    (None, true) => self.receipt(0),
                    (None, false) => Value::Null,
                }
            }
            "eth_getBlockReceipts" => {
                self.number_of(&params[0]).map_or(Value::Null, |n| json!([self.receipt_told(n, lies)]))
            }
            "eth_getLogs" => {
                let filter = &params[0];
                let range = match filter.get("blockHash") {
                    Some(hash) => self.number_of(hash).map(|n| (n, n)),
                    None => self.number_of(&filter["fromBlock"]).zip(self.number_of(&filter["toBlock"])),
                };
                let Some((from, to)) = range else { return json!([]) };
                let logs = (from..=to)
                    .flat_map(|n| self.receipt_told(n, lies)["logs"].as_array().cloned().unwrap_or_default());
                Value::Array(logs.collect())
            }
            _ => Value::Null,
        }
    }

    /// A provider of this chain on a loopback port, failing when `weather` says.
    pub async fn serve(self: &Arc<Chain>, lies: Lies, weather: Weather) -> Server {
        let chain = Arc::clone(self);
        Server::start(Arc::new(move |req: &Received| {
            // The request's calls (one, or a batch), each answered by `reply`.
            let each = |reply: &dyn Fn(&Value) -> Value| match req.json() {
                Value::Array(calls) => Value::Array(calls.iter().map(reply).collect()).to_string(),
                call => reply(&call).to_string(),
            };
            let error = |code: i64, message: &str| {
                each(&|call| json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": code, "message": message}}))
            };
            let answer = || {
                each(&|call| {
                    let method = call["method"].as_str().unwrap_or_default();
                    json!({"jsonrpc": "2.0", "id": call["id"], "result": chain.answer(method, &call["params"], lies)})
                })
            };
            let reply = match weather.fault(chain.started) {
                None => Reply::new(200).json(answer()),
                Some(Fault::Unavailable) => Reply::new(503).text("service unavailable"),
                Some(Fault::RateLimited) => Reply::new(429).header("retry-after", "1").text("Too Many Requests"),
                Some(Fault::Reset) => return Action::Reset,
                Some(Fault::Truncated) => {
                    // Half the body sent, the whole announced, then the connection closed.
                    let answer = answer();
                    let whole = u64::try_from(answer.len()).unwrap_or(u64::MAX);
                    let half = answer.as_bytes()[..answer.len() / 2].to_vec();
                    Reply::new(200).json(half).length(whole).end(End::Close)
                }
                Some(Fault::Malformed) => Reply::new(200).json("{\"jsonrpc\":\"2.0\",\"id\":"),
                Some(Fault::LimitExceeded) => Reply::new(200).json(error(-32005, "limit exceeded")),
                Some(Fault::Internal) => Reply::new(200).json(error(-32603, "internal error")),
                Some(Fault::Slow) => Reply::new(200).content_type("application/json").pause(SLOW).send(answer()),
            };
            Action::Reply(reply)
        }))
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(block: &Value) -> alloy::rpc::types::Header {
        serde_json::from_value(block.clone()).unwrap()
    }

    const FORGER: Lies = Lies { blocks: true, state: false, logs: false };
    const STATE_LIAR: Lies = Lies { blocks: false, state: true, logs: false };
    const LOG_LIAR: Lies = Lies { blocks: false, state: false, logs: true };

    #[test]
    fn seeded_weather_is_healthy_half_the_spells_brings_every_fault_and_differs_by_provider() {
        let spell = Duration::from_millis(1);
        let at = |provider, slot: u64| {
            // The spell `slot` spells after the start.
            let since = Instant::now().checked_sub(Duration::from_millis(slot)).unwrap();
            Weather::Seeded { seed: 42, provider, spell }.fault(since)
        };
        let draws: Vec<Option<Fault>> = (1..2_001).map(|slot| at(0, slot)).collect();
        let healthy = draws.iter().filter(|f| f.is_none()).count();
        assert!((800..1_200).contains(&healthy), "{healthy} of 2 000 spells healthy");
        for fault in Fault::ALL {
            assert!(draws.contains(&Some(fault)), "{fault:?} drawn");
        }
        let other: Vec<Option<Fault>> = (1..2_001).map(|slot| at(1, slot)).collect();
        assert_ne!(draws, other, "each provider its own spells");
        assert_eq!(Weather::Fair.fault(Instant::now()), None);
    }

    #[test]
    fn the_chains_blocks_hash_to_their_hash_and_the_forgers_do_not() {
        let chain = Chain::new();
        for n in 0..BLOCKS {
            let params = json!([format!("{n:#x}"), false]);
            let true_block = header(&chain.answer("eth_getBlockByNumber", &params, Lies::NONE));
            assert_eq!(true_block.inner.hash_slow(), true_block.hash, "block {n}");
            let forged = header(&chain.answer("eth_getBlockByNumber", &params, FORGER));
            assert_eq!(forged.hash, true_block.hash, "the hash kept");
            assert_ne!(forged.inner.hash_slow(), forged.hash, "block {n} forged");
        }
    }

    #[test]
    fn the_state_liar_is_one_wei_off_denies_mined_receipts_and_invents_others() {
        let chain = Chain::new();
        let balance = |lies| chain.answer("eth_getBalance", &json!([ACCOUNT, "latest"]), lies);
        assert_eq!(balance(Lies::NONE), json!(format!("{BALANCE:#x}")));
        assert_eq!(balance(STATE_LIAR), json!(format!("{:#x}", BALANCE + 1)));
        let receipt = |tx: B256, lies| chain.answer("eth_getTransactionReceipt", &json!([tx]), lies);
        assert_eq!(receipt(chain.tx(3), Lies::NONE), chain.receipt(3));
        assert_eq!(receipt(chain.tx(3), STATE_LIAR), Value::Null);
        assert_eq!(receipt(chain.unknown_tx(3), Lies::NONE), Value::Null);
        assert!(!receipt(chain.unknown_tx(3), STATE_LIAR).is_null());
    }

    #[test]
    fn the_receipts_hash_to_the_headers_root_and_the_log_liars_do_not() {
        let chain = Chain::new();
        let root = |receipts: Value| {
            let receipts: Vec<alloy::rpc::types::TransactionReceipt> =
                serde_json::from_value(receipts).unwrap();
            let envelopes: Vec<ReceiptEnvelope> =
                receipts.into_iter().map(|r| r.inner.map_logs(|l| l.inner)).collect();
            alloy::consensus::proofs::calculate_receipt_root(&envelopes)
        };
        for n in 0..BLOCKS {
            let hash = json!([chain.hash(n)]);
            let claimed = header(&chain.block(n)).inner.receipts_root;
            assert_eq!(root(chain.answer("eth_getBlockReceipts", &hash, Lies::NONE)), claimed, "block {n}");
            let told = root(chain.answer("eth_getBlockReceipts", &hash, LOG_LIAR));
            assert_eq!(told == claimed, n % 4 == 0 || n % 4 == 2, "block {n}: the liar's receipts");
            let logs = chain.answer("eth_getLogs", &json!([{"blockHash": chain.hash(n)}]), LOG_LIAR);
            let expected = [1, 0, 1, 2][n as usize % 4];
            assert_eq!(
                logs.as_array().map(Vec::len),
                Some(expected),
                "block {n}'s logs as the liar tells them"
            );
        }
    }
}
