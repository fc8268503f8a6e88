//! How the transport reaches the one request loop when it owns its `reqwest::Client`: the
//! client is the sender of every attempt (no middleware chain), and the options come from the
//! packet's plan instead of a request's extensions.

use http::Extensions;
use reqwest::{Request, Response};

use crate::jsonrpc::JsonRpcClassifier;
use crate::judging::classify::{Classified, Classifier};

use crate::flow::attempt::Sender;
use crate::flow::fast;
use crate::flow::run::{begin, ended, run};
use crate::flow::session::Outcome;
use crate::judging::scope::Scope;
use crate::request::endpoint::EndpointId;
use crate::request::options::RequestOptions;
use crate::{Failover, FailoverBuilder};

/// A plain `reqwest::Client` as the sender: no middleware chain.
#[derive(Clone, Copy, Debug)]
struct Direct<'c>(&'c reqwest::Client);

impl Sender for Direct<'_> {
    async fn send(&self, req: Request, _ext: &mut Extensions) -> reqwest_middleware::Result<Response> {
        self.0.execute(req).await.map_err(reqwest_middleware::Error::Reqwest)
    }
}

impl Failover {
    /// One request through this `Failover`'s loop on `client` directly, with `opts` (the
    /// packet's plan and scope): what the transport does when it owns its client. The
    /// response is not marked with `ServedBy`; the endpoint's index comes back.
    pub(crate) async fn execute_on(
        &self,
        client: &reqwest::Client,
        req: Request,
        opts: &RequestOptions<'_>,
        scope: &dyn Scope,
    ) -> Outcome {
        let shared = &*self.shared;
        let mut ext = Extensions::new();
        let sender = Direct(client);
        if let Some(plain) = fast::plain(shared, opts, Some(scope)) {
            return fast::request(shared, req, plain, Some(scope), (&mut ext, sender), |_, outcome| outcome)
                .await;
        }
        Box::pin(async {
            let (session, guard) = begin(shared, req, opts, Some(scope))?;
            let outcome = run(shared, session, &mut ext, &sender).await;
            ended(shared, guard, outcome)
        })
        .await
    }

    /// The id of endpoint `i`.
    pub(crate) fn endpoint_id(&self, i: usize) -> &EndpointId {
        self.shared.slots[i].id()
    }

    /// The URL attempts to the first endpoint are sent to: a request addressed there is not
    /// re-addressed for that attempt (one URL copy less).
    pub(crate) fn first_url(&self) -> Option<&url::Url> {
        self.shared.slots.first().map(|slot| slot.destination.url())
    }
}

impl FailoverBuilder {
    /// Judging as the transport needs it: with the [`JsonRpcClassifier`] when the builder has
    /// no classifier of its own, else with the builder's, which the JSON-RPC classifier reads
    /// the body for first, so that the packet's scope learns from every answer what it says
    /// is missing (a bundle's block, archive state, a method), whatever the verdict.
    pub(crate) fn judging_packets(mut self) -> FailoverBuilder {
        let judge: Box<dyn Classifier> = match self.classifier.take() {
            None => Box::new(JsonRpcClassifier::new()),
            Some(inner) => Box::new(WithFindings { json: JsonRpcClassifier::new(), inner }),
        };
        self.classifier = Some(judge);
        self
    }
}

/// A caller's classifier, given what the JSON-RPC classifier found in each answer: the
/// verdict is the caller's; the findings (what the answer says is missing) the JSON-RPC
/// classifier's, which reads the body once (the caller's classifier reads the same chunks
/// again, not a copy). A body that breaks off is a failed attempt before the caller's
/// classifier sees it.
struct WithFindings {
    json: JsonRpcClassifier,
    inner: Box<dyn Classifier>,
}

#[async_trait::async_trait]
impl Classifier for WithFindings {
    async fn classify(&self, endpoint: &EndpointId, response: Response) -> Classified {
        match self.json.classify(endpoint, response).await {
            Classified::Response(response, found) => match self.inner.classify(endpoint, response).await {
                Classified::Response(response, mut judgement) => {
                    judgement.findings = found.findings;
                    Classified::Response(response, judgement)
                }
                failed => failed,
            },
            failed => failed,
        }
    }
}
