//! JSON-RPC calls to the node: any call, and the few the tests use (mine, nonce, balance, block
//! number).

use std::time::Duration;

use serde_json::{Value, json};

use super::error::AnvilError;
use super::{Anvil, RPC_TIMEOUT};

impl Anvil {
    /// One JSON-RPC call to the node, bounded by 10 s; returns its `result`.
    ///
    /// # Errors
    ///
    /// [`AnvilError::Http`] when no HTTP answer came back, [`AnvilError::Rpc`] for a JSON-RPC
    /// error, [`AnvilError::BadAnswer`] for anything else that is not a `result`.
    pub async fn rpc(&self, method: &str, params: Value) -> Result<Value, AnvilError> {
        self.rpc_timeout(method, params, RPC_TIMEOUT).await
    }

    /// [`rpc`](Anvil::rpc) with its own bound.
    ///
    /// # Errors
    ///
    /// As [`rpc`](Anvil::rpc); a call that takes longer than `timeout` is an
    /// [`AnvilError::Http`] whose error `is_timeout()`.
    pub async fn rpc_timeout(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, AnvilError> {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let response = self
            .client
            .post(self.url())
            .header("content-type", "application/json")
            .body(body.to_string())
            .timeout(timeout)
            .send()
            .await
            .map_err(AnvilError::Http)?;
        let bytes = response.bytes().await.map_err(AnvilError::Http)?;
        let bad = || AnvilError::BadAnswer {
            method: method.to_owned(),
            answer: String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).into_owned(),
        };
        let mut answer: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        if let Some(error) = answer.get_mut("error") {
            return Err(AnvilError::Rpc { method: method.to_owned(), error: error.take() });
        }
        answer.get_mut("result").map(Value::take).ok_or_else(bad)
    }

    /// Mines `blocks` blocks at once (`anvil_mine`).
    ///
    /// # Errors
    ///
    /// As [`rpc`](Anvil::rpc).
    pub async fn mine(&self, blocks: u64) -> Result<(), AnvilError> {
        self.rpc("anvil_mine", json!([format!("{blocks:#x}")])).await.map(drop)
    }

    /// How many transactions `address` has sent, as of the latest block
    /// (`eth_getTransactionCount`): a check that a transfer reached this node or did not.
    ///
    /// # Errors
    ///
    /// As [`block_number`](Anvil::block_number).
    pub async fn nonce(&self, address: &str) -> Result<u64, AnvilError> {
        let answer = self.rpc("eth_getTransactionCount", json!([address, "latest"])).await?;
        quantity("eth_getTransactionCount", &answer)
    }

    /// The balance of `address` in wei, as of the latest block (`eth_getBalance`).
    ///
    /// # Errors
    ///
    /// As [`block_number`](Anvil::block_number).
    pub async fn balance(&self, address: &str) -> Result<u128, AnvilError> {
        let answer = self.rpc("eth_getBalance", json!([address, "latest"])).await?;
        answer
            .as_str()
            .and_then(|s| s.strip_prefix("0x"))
            .and_then(|hex| u128::from_str_radix(hex, 16).ok())
            .ok_or_else(|| AnvilError::BadAnswer {
                method: "eth_getBalance".to_owned(),
                answer: answer.to_string(),
            })
    }

    /// The node's latest block number (`eth_blockNumber`).
    ///
    /// # Errors
    ///
    /// As [`rpc`](Anvil::rpc), and [`AnvilError::BadAnswer`] when the answer is not a quantity.
    pub async fn block_number(&self) -> Result<u64, AnvilError> {
        let answer = self.rpc("eth_blockNumber", json!([])).await?;
        quantity("eth_blockNumber", &answer)
    }
}

/// A JSON-RPC quantity (`"0x2a"`) as a number.
pub(super) fn quantity(method: &str, answer: &Value) -> Result<u64, AnvilError> {
    answer
        .as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .ok_or_else(|| AnvilError::BadAnswer { method: method.to_owned(), answer: answer.to_string() })
}
