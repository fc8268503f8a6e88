//! How an answer is judged: the [`Classifier`](crate::Classifier) interface and its verdicts,
//! the judge that applies them, the request's own [`Scope`](crate::Scope) (which rules
//! endpoints out and reviews answers), what an answer says is missing (findings), and the
//! `Retry-After` a provider asks for. The JSON-RPC classifier is [`crate::jsonrpc`].

pub(crate) mod classify;
pub(crate) mod findings;
pub(crate) mod judge;
pub(crate) mod retry_after;
pub(crate) mod scope;
