//! The transport's side of verified blocks (see `crate::alloy::verify`): an answer whose
//! blocks failed their check is kept, or replaced by another provider's.

use std::sync::Arc;

use alloy_json_rpc::{RequestPacket, ResponsePacket};
use alloy_transport::TransportResult;

use super::FailoverTransport;
use crate::EndpointId;
use crate::alloy::failure::raised::{Detail, Raised};
use crate::alloy::reference::BundleState;
use crate::alloy::verify::Found;

/// What the check of an answer's blocks left: the answer to go on with, or a complete
/// answer of another provider to return as it is.
pub(super) enum Checked {
    Keep(ResponsePacket, Option<EndpointId>),
    Replaced(ResponsePacket),
}

impl FailoverTransport {
    /// `answer` (from `served`), whose blocks failed their check (`found`): kept when the
    /// chain's headers turn out not to hash this way (or no other provider can tell); else
    /// `served` is put off the chain and the packet goes to another provider, whose (checked)
    /// answer replaces it. Boxed: only a failed check pays for it.
    pub(super) fn checked<'a>(
        &'a self,
        packet: &'a RequestPacket,
        bundle: Option<&'a Arc<BundleState>>,
        (answer, served): (ResponsePacket, Option<EndpointId>),
        mut forgers: Vec<EndpointId>,
        found: Found,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = TransportResult<Checked>> + Send + 'a>> {
        Box::pin(async move {
            let blocks = &self.coherence.blocks;
            let (number, unhashed) = match found {
                Found::Nothing | Found::Verified => return Ok(Checked::Keep(answer, served)),
                Found::Unhashed(number) => (number, true),
                Found::NotAsked(number) => (number, false),
            };
            // Who answered it is not known: its word is taken.
            let Some(by) = served else { return Ok(Checked::Keep(answer, None)) };
            forgers.push(by.clone());
            let others = self.endpoints.iter().any(|e| !forgers.contains(e));
            if unhashed && !blocks.is_on() {
                // No block has verified yet: a forgery, or a chain whose headers do not hash
                // this way? Another provider's block says. With none, its word is taken.
                if !others {
                    return Ok(Checked::Keep(answer, Some(by)));
                }
                let second = self.send_with(packet.clone(), bundle, forgers.clone(), false).await;
                let Ok(second) = second else { return Ok(Checked::Keep(answer, Some(by))) };
                return Ok(match crate::alloy::verify::check(packet, &second) {
                    Found::Unhashed(_) => {
                        if blocks.turn_off() {
                            self.failover.shared.emit(|| crate::Event::BlocksUnverifiable { number });
                        }
                        Checked::Keep(answer, Some(by))
                    }
                    Found::Verified => {
                        blocks.verified();
                        self.forged(&by, number);
                        Checked::Replaced(second)
                    }
                    // Neither says: the first answer stands.
                    Found::Nothing | Found::NotAsked(_) => Checked::Keep(answer, Some(by)),
                });
            }
            self.forged(&by, number);
            if !others {
                return Err(Raised::new(Detail::Forged { number, by: forgers }).into_transport());
            }
            self.send_with(packet.clone(), bundle, forgers, true).await.map(Checked::Replaced)
        })
    }

    /// `endpoint` answered a block that is not the chain's: off the chain for the lack period.
    fn forged(&self, endpoint: &EndpointId, number: Option<u64>) {
        self.coherence.capabilities.found(
            endpoint,
            crate::alloy::Capability::TrueBlocks,
            self.rules.lack_for,
        );
        self.failover.shared.emit(|| crate::Event::ForgedBlock { endpoint, number });
    }
}
