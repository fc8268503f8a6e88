//! The transport's own calls (for a bundle, the follower, the log splitter): one request or
//! a batch through the transport, answered with what was served and by whom.

use alloy_json_rpc::{RequestPacket, ResponsePacket};
use alloy_transport::{TransportError, TransportErrorKind, TransportResult};
use serde_json::value::RawValue;

use crate::{EndpointId, ExcludedEndpoints};

use super::FailoverTransport;

/// A call of `method` with `params` and id `id`, whose answering endpoint is written into
/// `cell`, sent to none of `avoid`.
fn served_request(
    method: &'static str,
    id: u64,
    params: impl alloy_json_rpc::RpcSend,
    cell: &crate::alloy::ServedByCell,
    avoid: &[EndpointId],
) -> TransportResult<alloy_json_rpc::SerializedRequest> {
    let mut request = alloy_json_rpc::Request::new(method, alloy_json_rpc::Id::Number(id), params)
        .serialize()
        .map_err(TransportError::ser_err)?;
    let extensions = request.meta_mut().extensions_mut();
    extensions.insert(cell.clone());
    if !avoid.is_empty() {
        extensions.insert(ExcludedEndpoints(avoid.to_vec()));
    }
    Ok(request)
}

/// A call's raw result parsed as `R`; `None` without one, or when it is not an `R`.
fn parsed<R: serde::de::DeserializeOwned>(raw: Option<&RawValue>) -> Option<R> {
    raw.and_then(|raw| serde_json::from_str(raw.get()).ok())
}

impl FailoverTransport {
    /// One call of `method` with `params` through the transport, its result parsed as `R`.
    pub(crate) async fn call<R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl alloy_json_rpc::RpcSend,
    ) -> TransportResult<R> {
        self.call_served(method, params, &[]).await.map(|(r, _)| r)
    }

    /// `call`, never to the endpoints of `avoid`, with the endpoint that answered.
    pub(crate) async fn call_served<R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: impl alloy_json_rpc::RpcSend,
        avoid: &[EndpointId],
    ) -> TransportResult<(R, Option<EndpointId>)> {
        let cell = crate::alloy::ServedByCell::new();
        let request = served_request(method, 0, params, &cell, avoid)?;
        let answer = self.send_in(RequestPacket::Single(request), None).await?;
        let ResponsePacket::Single(response) = answer else {
            return Err(TransportErrorKind::custom_str("a single call was answered with a batch"));
        };
        let result = match response.payload {
            alloy_json_rpc::ResponsePayload::Success(result) => result,
            alloy_json_rpc::ResponsePayload::Failure(payload) => {
                return Err(alloy_json_rpc::RpcError::ErrorResp(payload));
            }
        };
        let value =
            serde_json::from_str(result.get()).map_err(|err| TransportError::deser_err(err, result.get()))?;
        Ok((value, cell.get()))
    }

    /// One batch of `method` calls through the transport, one per entry of `params`: each
    /// call's result parsed as `R`, `None` where the call failed or its answer is missing;
    /// never to the endpoints of `avoid`.
    pub(crate) async fn call_batch<R: serde::de::DeserializeOwned, P: alloy_json_rpc::RpcSend>(
        &self,
        method: &'static str,
        params: Vec<P>,
        avoid: &[EndpointId],
    ) -> TransportResult<(Vec<Option<R>>, Option<EndpointId>)> {
        let cell = crate::alloy::ServedByCell::new();
        let requests = (0_u64..)
            .zip(params)
            .map(|(i, p)| served_request(method, i, p, &cell, avoid))
            .collect::<Result<Vec<_>, TransportError>>()?;
        let results = self.batch(requests).await?;
        Ok((results.iter().map(|r| parsed(r.as_deref())).collect(), cell.get()))
    }

    /// Two calls of different methods in one batch (one provider's view of both), never to
    /// the endpoints of `avoid`: each one's result, `None` where it failed.
    pub(crate) async fn call_pair<A, B>(
        &self,
        (first, first_params): (&'static str, impl alloy_json_rpc::RpcSend),
        (second, second_params): (&'static str, impl alloy_json_rpc::RpcSend),
        avoid: &[EndpointId],
    ) -> TransportResult<((Option<A>, Option<B>), Option<EndpointId>)>
    where
        A: serde::de::DeserializeOwned,
        B: serde::de::DeserializeOwned,
    {
        let cell = crate::alloy::ServedByCell::new();
        let requests = vec![
            served_request(first, 0, first_params, &cell, avoid)?,
            served_request(second, 1, second_params, &cell, avoid)?,
        ];
        let results = self.batch(requests).await?;
        let raw = |i: usize| results.get(i).and_then(Option::as_deref);
        Ok(((parsed(raw(0)), parsed(raw(1))), cell.get()))
    }

    /// `requests` (ids 0, 1, ...) through the transport as one batch: each call's raw result
    /// by id, `None` where it failed or its answer is missing.
    pub(super) async fn batch(
        &self,
        requests: Vec<alloy_json_rpc::SerializedRequest>,
    ) -> TransportResult<Vec<Option<Box<RawValue>>>> {
        let n = requests.len();
        let answer = self.send_in(RequestPacket::Batch(requests), None).await?;
        let responses = match answer {
            ResponsePacket::Batch(responses) => responses,
            ResponsePacket::Single(response) => vec![response],
        };
        let mut results: Vec<Option<Box<RawValue>>> = vec![None; n];
        for response in responses {
            let (alloy_json_rpc::Id::Number(i), alloy_json_rpc::ResponsePayload::Success(result)) =
                (response.id, response.payload)
            else {
                continue;
            };
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| results.get_mut(i)) {
                *slot = Some(result);
            }
        }
        Ok(results)
    }
}
