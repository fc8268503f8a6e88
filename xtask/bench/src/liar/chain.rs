//! The liar scenario's chain and its providers: honest, or lying in well-formed ways.

use std::sync::Arc;

use alloy::primitives::B256;
use failnext_loopback::{Action, Received, Reply, Server};
use serde_json::{Value, json};

/// Blocks on the chain.
pub(super) const BLOCKS: u64 = 16;

/// Every account's balance, in wei.
pub(super) const BALANCE: u64 = 1_000_000_000_000_000_000;

/// The account whose balance is read.
pub(super) const ACCOUNT: &str = "0x00000000000000000000000000000000000000aa";

/// What a provider lies about: its blocks (one header field changed, the hash kept), its
/// state (a balance one wei more, `null` for a mined transaction's receipt, a receipt for a
/// transaction nobody mined).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lies {
    pub(crate) blocks: bool,
    pub(crate) state: bool,
}

impl Lies {
    pub(super) const NONE: Lies = Lies { blocks: false, state: false };
}

/// Blocks 0..[`BLOCKS`], each header hashed by alloy and linked to its parent, one
/// transaction each (hash `n + 1` as 32 bytes).
#[derive(Debug)]
pub(super) struct Chain {
    blocks: Vec<Value>,
}

impl Chain {
    pub(super) fn new() -> Chain {
        let mut parent = B256::ZERO;
        let blocks = (0..BLOCKS)
            .map(|number| {
                let inner = alloy::consensus::Header {
                    number,
                    parent_hash: parent,
                    gas_limit: 30_000_000,
                    gas_used: 21_000,
                    timestamp: 1_700_000_000 + 12 * number,
                    ..Default::default()
                };
                let header = alloy::rpc::types::Header::new(inner);
                parent = header.hash;
                let mut block = serde_json::to_value(header).unwrap_or_default();
                block["transactions"] = json!([Chain::tx_of(number)]);
                block
            })
            .collect();
        Chain { blocks }
    }

    fn tx_of(n: u64) -> B256 {
        B256::left_padding_from(&(n + 1).to_be_bytes())
    }

    /// Block `n` as the chain has it.
    pub(super) fn block(&self, n: u64) -> Value {
        self.blocks.get(n as usize).cloned().unwrap_or(Value::Null)
    }

    /// Block `n`'s transaction.
    pub(super) fn tx(&self, n: u64) -> B256 {
        Chain::tx_of(n)
    }

    /// A transaction nobody mined.
    pub(super) fn unknown_tx(&self, n: u64) -> B256 {
        B256::left_padding_from(&(1_000_000 + n).to_be_bytes())
    }

    /// The receipt of block `n`'s transaction.
    pub(super) fn receipt(&self, n: u64) -> Value {
        let block = self.block(n);
        json!({
            "transactionHash": Chain::tx_of(n),
            "transactionIndex": "0x0",
            "blockHash": block["hash"],
            "blockNumber": format!("{n:#x}"),
            "status": "0x1",
            "type": "0x2",
            "gasUsed": "0x5208",
            "cumulativeGasUsed": "0x5208",
            "effectiveGasPrice": "0x1",
            "from": "0x0000000000000000000000000000000000000001",
            "to": ACCOUNT,
            "contractAddress": null,
            "logs": [],
            "logsBloom": format!("0x{}", "0".repeat(512)),
        })
    }

    /// What a provider of this chain answers to one call, lying as `lies` says.
    fn answer(&self, method: &str, params: &Value, lies: Lies) -> Value {
        match method {
            "eth_chainId" => json!("0x1"),
            "eth_blockNumber" => json!(format!("{:#x}", BLOCKS - 1)),
            "eth_getBlockByNumber" => {
                let n =
                    params[0].as_str().and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok());
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
                    (Some(n), false) => self.receipt(n),
                    (None, true) => self.receipt(0),
                    (None, false) => Value::Null,
                }
            }
            _ => Value::Null,
        }
    }

    /// A provider of this chain on a loopback port.
    pub(super) async fn serve(self: &Arc<Chain>, lies: Lies) -> Server {
        let chain = Arc::clone(self);
        Server::start(Arc::new(move |req: &Received| {
            let call = req.json();
            let result = chain.answer(call["method"].as_str().unwrap_or_default(), &call["params"], lies);
            Action::Reply(
                Reply::new(200)
                    .json(json!({"jsonrpc": "2.0", "id": call["id"], "result": result}).to_string()),
            )
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

    #[test]
    fn the_chains_blocks_hash_to_their_hash_and_the_forgers_do_not() {
        let chain = Chain::new();
        let forger = Lies { blocks: true, state: false };
        for n in 0..BLOCKS {
            let params = json!([format!("{n:#x}"), false]);
            let true_block = header(&chain.answer("eth_getBlockByNumber", &params, Lies::NONE));
            assert_eq!(true_block.inner.hash_slow(), true_block.hash, "block {n}");
            let forged = header(&chain.answer("eth_getBlockByNumber", &params, forger));
            assert_eq!(forged.hash, true_block.hash, "the hash kept");
            assert_ne!(forged.inner.hash_slow(), forged.hash, "block {n} forged");
        }
    }

    #[test]
    fn the_state_liar_is_one_wei_off_denies_mined_receipts_and_invents_others() {
        let chain = Chain::new();
        let liar = Lies { blocks: false, state: true };
        let balance = |lies| chain.answer("eth_getBalance", &json!([ACCOUNT, "latest"]), lies);
        assert_eq!(balance(Lies::NONE), json!(format!("{BALANCE:#x}")));
        assert_eq!(balance(liar), json!(format!("{:#x}", BALANCE + 1)));
        let receipt = |tx: B256, lies| chain.answer("eth_getTransactionReceipt", &json!([tx]), lies);
        assert_eq!(receipt(chain.tx(3), Lies::NONE), chain.receipt(3));
        assert_eq!(receipt(chain.tx(3), liar), Value::Null);
        assert_eq!(receipt(chain.unknown_tx(3), Lies::NONE), Value::Null);
        assert!(!receipt(chain.unknown_tx(3), liar).is_null());
    }
}
