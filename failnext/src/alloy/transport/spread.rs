//! How a packet goes out: to the one endpoint the loop picks, or to several at once — a raw
//! transaction fanned out to every endpoint named for it, a consensus read voted, a lookup of
//! a fanned-out transaction asked of every relay it went to. Decided once per packet, before
//! the route (the transport's own client, or a middleware chain) sends it.

use std::future::Future;

use alloy_json_rpc::RequestPacket;
use alloy_primitives::B256;
use alloy_transport::TransportResult;

use super::{Answered, FailoverTransport};
use crate::EndpointId;
use crate::alloy::consensus::Consensus;
use crate::alloy::plan::Plan;

/// How one packet goes out.
pub(super) enum Spread<'a> {
    /// To the endpoint the loop picks (and on, as it fails over).
    One,
    /// A raw transaction to every endpoint named for fan-outs, once each.
    FanOut(&'a [EndpointId], B256),
    /// A consensus read of a method, by the usable providers, in order.
    Vote(&'a Consensus, &'a str, Vec<EndpointId>),
    /// A lookup of a fanned-out transaction, of every relay it went to.
    Relays(Vec<EndpointId>),
}

impl FailoverTransport {
    /// How `packet` (planned as `plan`, `unfit` passed over, `reads`: every call a plain
    /// read) goes out.
    pub(super) fn spread<'a>(
        &'a self,
        packet: &'a RequestPacket,
        plan: &Plan<'_>,
        unfit: &[(EndpointId, crate::Unfit)],
        reads: bool,
    ) -> Spread<'a> {
        if let Some((to, hash)) =
            self.fanout.as_deref().and_then(|to| Some((to, plan.raw_broadcast(packet)?)))
        {
            return Spread::FanOut(to, hash);
        }
        if !reads {
            return Spread::One;
        }
        let voted = match &self.consensus {
            Some(consensus) if plan.may_fail_over && plan.pinned.is_none() => {
                consensus.covers(packet).map(|method| (&**consensus, method))
            }
            _ => None,
        };
        if let Some((consensus, method)) = voted {
            let usable =
                |id: &&EndpointId| !plan.excluded.contains(id) && !unfit.iter().any(|(e, _)| e == *id);
            return Spread::Vote(consensus, method, self.endpoints.iter().filter(usable).cloned().collect());
        }
        match self.relays(packet) {
            relays if relays.is_empty() => Spread::One,
            relays => Spread::Relays(relays),
        }
    }

    /// `spread` carried out: `send(None)` lets the loop pick, `send(Some(id))` asks `id` alone.
    pub(super) async fn spread_out<'a, F, Fut>(
        &self,
        spread: &'a Spread<'a>,
        plan: &Plan<'_>,
        send: F,
    ) -> TransportResult<Answered>
    where
        F: Fn(Option<&'a EndpointId>) -> Fut,
        Fut: Future<Output = TransportResult<Answered>>,
    {
        match spread {
            Spread::One => send(None).await,
            Spread::FanOut(targets, hash) => self.fan_out(targets, *hash, plan, send).await,
            Spread::Vote(consensus, method, voters) => self.vote(consensus, method, voters, send).await,
            Spread::Relays(relays) => self.ask_relays(relays, send).await,
        }
    }
}
