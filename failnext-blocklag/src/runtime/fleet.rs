//! One prober per provider per fleet ([`MonitorBuilder::fleet`](crate::MonitorBuilder)): a
//! probe's report written to Redis by the process that holds the provider's lease, and read
//! back as their own probe by the others.

use std::time::Duration;

use failnext::EndpointId;
use serde_json::{Value, json};

use crate::probe::exchange::ProbeReport;
use crate::probe::rpc::Method;
use crate::{BlockHash, ProbeError, ProbeErrorKind, ProbeFailure};

/// How long a lease on a provider lasts without being renewed: three probe timeouts, at
/// least 3 s (the holder renews it at each probe).
pub(crate) fn lease_for(timeout: Duration) -> Duration {
    (timeout * 3).max(Duration::from_secs(3))
}

/// The name of provider `id`'s lease and of its probe note (endpoint ids only).
pub(crate) fn name(id: &EndpointId) -> String {
    format!("blocklag:probe:{}", id.as_str())
}

/// The name of provider `id`'s highest head seen in traffic by any process of the fleet
/// (endpoint ids only).
pub(crate) fn head_name(id: &EndpointId) -> String {
    format!("blocklag:head:{}", id.as_str())
}

/// How long the fleet keeps a provider's highest head seen in traffic: past it (the
/// provider's chain restarted lower, say), the next head seen is announced afresh.
pub(crate) const HEAD_FOR: Duration = Duration::from_secs(10);

/// `report` as a note.
pub(crate) fn encode(report: &ProbeReport) -> String {
    let result = match &report.result {
        Ok(height) => json!({ "ok": height }),
        Err(failure) => json!({ "err": error(failure) }),
    };
    json!({
        "result": result,
        "hash": report.hash.map(|h| h.to_string()),
        "latency_us": report.latency.map(|l| u64::try_from(l.as_micros()).unwrap_or(u64::MAX)),
        "chain_verified": report.chain_verified,
        "timestamp": report.timestamp,
        "chain_seen": report.chain_seen,
    })
    .to_string()
}

fn error(failure: &ProbeFailure) -> Value {
    let e = failure.error();
    let mut v =
        json!({ "method": failure.method(), "kind": format!("{:?}", e.kind()), "message": e.to_string() });
    match e {
        ProbeError::Status(status) => v["status"] = json!(status.as_u16()),
        ProbeError::JsonRpc { code, message } => {
            v["code"] = json!(code);
            v["text"] = json!(message);
        }
        ProbeError::InvalidQuantity(shown)
        | ProbeError::NotABlock(shown)
        | ProbeError::InvalidHash(shown) => {
            v["shown"] = json!(shown);
        }
        ProbeError::MissingHeadField(field) => v["field"] = json!(field),
        ProbeError::WrongChain { expected, actual } => {
            v["expected"] = json!(expected);
            v["actual"] = json!(actual);
        }
        _ => {}
    }
    v
}

/// The report a note holds, for provider `id`; `None` when it is not one.
pub(crate) fn decode(note: &str, id: &EndpointId) -> Option<ProbeReport> {
    let v: Value = serde_json::from_str(note).ok()?;
    let result = match (&v["result"]["ok"], &v["result"]["err"]) {
        (Value::Number(height), _) => Ok(height.as_u64()?),
        (_, err @ Value::Object(_)) => {
            let method = match err["method"].as_str()? {
                "eth_chainId" => Method::ChainId,
                "eth_getBlockByNumber" => Method::BlockByNumber,
                _ => Method::BlockNumber,
            };
            Err(ProbeFailure::new(id.clone(), method, probe_error(err)?))
        }
        _ => return None,
    };
    Some(ProbeReport {
        result,
        hash: v["hash"].as_str().and_then(|h| h.parse::<BlockHash>().ok()),
        latency: v["latency_us"].as_u64().map(Duration::from_micros),
        chain_verified: v["chain_verified"].as_bool().unwrap_or(false),
        timestamp: v["timestamp"].as_u64(),
        chain_seen: v["chain_seen"].as_u64(),
    })
}

fn probe_error(err: &Value) -> Option<ProbeError> {
    let shown = || err["shown"].as_str().unwrap_or_default().to_owned();
    Some(match err["kind"].as_str()? {
        "Timeout" => ProbeError::Timeout,
        "Status" => {
            ProbeError::Status(http::StatusCode::from_u16(u16::try_from(err["status"].as_u64()?).ok()?).ok()?)
        }
        "BodyTooLarge" => ProbeError::BodyTooLarge,
        "InvalidJson" => ProbeError::InvalidJson,
        "NotJsonRpc" => ProbeError::NotJsonRpc,
        "IdMismatch" => ProbeError::IdMismatch,
        "JsonRpc" => ProbeError::JsonRpc {
            code: err["code"].as_i64()?,
            message: err["text"].as_str().unwrap_or_default().to_owned(),
        },
        "InvalidQuantity" => ProbeError::InvalidQuantity(shown()),
        "NotABlock" => ProbeError::NotABlock(shown()),
        "InvalidHash" => ProbeError::InvalidHash(shown()),
        "MissingHeadField" => {
            ProbeError::MissingHeadField(if err["field"] == "hash" { "hash" } else { "number" })
        }
        "WrongChain" => {
            ProbeError::WrongChain { expected: err["expected"].as_u64()?, actual: err["actual"].as_u64()? }
        }
        _ => ProbeError::Relayed {
            kind: ProbeErrorKind::Transport,
            message: err["message"].as_str().unwrap_or_default().to_owned(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(result: Result<u64, ProbeError>) -> ProbeReport {
        let id = EndpointId::from("p");
        ProbeReport {
            result: result.map_err(|e| ProbeFailure::new(id, Method::ChainId, e)),
            hash: Some(BlockHash::from([7u8; 32])),
            latency: Some(Duration::from_micros(1234)),
            chain_verified: true,
            timestamp: Some(1_700_000_000),
            chain_seen: None,
        }
    }

    #[test]
    fn a_probe_note_gives_back_the_report_a_wrong_chain_included() {
        let id = EndpointId::from("p");
        for result in [
            Ok(42),
            Err(ProbeError::WrongChain { expected: 1, actual: 10 }),
            Err(ProbeError::Status(http::StatusCode::TOO_MANY_REQUESTS)),
            Err(ProbeError::JsonRpc { code: -32005, message: "limit".to_owned() }),
            Err(ProbeError::Timeout),
        ] {
            let sent = report(result);
            let back = decode(&encode(&sent), &id).expect("a note");
            assert_eq!(format!("{:?}", back.result), format!("{:?}", sent.result));
            assert_eq!((back.hash, back.latency, back.timestamp), (sent.hash, sent.latency, sent.timestamp));
        }
        assert!(decode("not json", &id).is_none());
    }
}
