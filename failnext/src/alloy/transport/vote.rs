//! A consensus read's votes (see [`consensus`](crate::alloy::consensus)): the providers asked,
//! their answers compared, the answer enough of them gave returned.

use std::future::Future;

use alloy_json_rpc::{Response, ResponsePacket, ResponsePayload};
use alloy_transport::TransportResult;

use super::{Answered, FailoverTransport};
use crate::EndpointId;
use crate::alloy::Capability;
use crate::alloy::consensus::{Consensus, digest, missing, short, winner};
use crate::alloy::failure::raised::{Detail, Raised};

impl FailoverTransport {
    /// A read of `method` voted by `voters` (the usable providers, in order), each asked
    /// alone through `send`: `agree` of them at once, then as many more as the best answer
    /// lacks, up to the quorum's `of`.
    pub(super) async fn vote<'a, F, Fut>(
        &self,
        consensus: &Consensus,
        method: &str,
        voters: &'a [EndpointId],
        send: F,
    ) -> TransportResult<Answered>
    where
        F: Fn(Option<&'a EndpointId>) -> Fut,
        Fut: Future<Output = TransportResult<Answered>>,
    {
        let (agree, of) = (consensus.quorum.agree(), consensus.quorum.of());
        let mut ballots: Vec<(EndpointId, Option<String>)> = Vec::with_capacity(of);
        let mut answers: Vec<(String, Answered)> = Vec::new();
        let mut next = voters.iter().take(of);
        let mut ask = agree;
        while winner(&ballots, agree).is_none() {
            let round: Vec<&EndpointId> = next.by_ref().take(ask).collect();
            if round.is_empty() {
                break;
            }
            let results = futures_util::future::join_all(round.iter().map(|id| send(Some(*id)))).await;
            for (id, result) in round.into_iter().zip(results) {
                let said = match result {
                    // An error that blames the provider (a rate limit, an internal error, a
                    // block it does not know) says nothing of the chain: no vote.
                    Ok((ResponsePacket::Single(response), _)) if blames_provider(&response) => None,
                    Ok((ResponsePacket::Single(response), served)) => {
                        let said = digest(method, &response);
                        if !answers.iter().any(|(d, _)| *d == said) {
                            answers.push((said.clone(), (ResponsePacket::Single(response), served)));
                        }
                        Some(said)
                    }
                    Ok((ResponsePacket::Batch(_), _)) | Err(_) => None,
                };
                ballots.push((id.clone(), said));
            }
            ask = missing(&ballots, agree);
        }
        let Some(won) = winner(&ballots, agree).map(str::to_owned) else {
            let ballots = ballots.into_iter().map(|(id, d)| (id, d.as_deref().map(short))).collect();
            let method = method.to_owned();
            return Err(Raised::new(Detail::NoConsensus { method, agree, ballots }).into_transport());
        };
        for (endpoint, said) in &ballots {
            let Some(said) = said else { continue };
            let agreed = *said == won;
            if !agreed {
                self.failover.shared.emit(|| crate::Event::Disagreed { endpoint, method });
            }
            if consensus.voted(endpoint, method, agreed) {
                let ruled_out = Capability::method(method);
                self.coherence.capabilities.found(endpoint, ruled_out, self.rules.lack_for);
            }
        }
        let at = answers.iter().position(|(d, _)| *d == won).unwrap_or_default();
        Ok(answers.swap_remove(at).1)
    }
}

/// Whether `response` is an error that blames the provider (see
/// [`blames_provider`](crate::jsonrpc::error_object::blames_provider)): no vote.
fn blames_provider(response: &Response) -> bool {
    let ResponsePayload::Failure(error) = &response.payload else { return false };
    let data = error.data.as_deref().map(serde_json::value::RawValue::get);
    crate::jsonrpc::error_object::blames_provider(error.code, &error.message, data)
}
