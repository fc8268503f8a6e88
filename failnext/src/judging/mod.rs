//! How an answer is judged: the [`Classifier`](crate::Classifier) interface and its verdicts,
//! the judge that applies them, what an answer says is missing (findings), and the
//! `Retry-After` a provider asks for. The JSON-RPC classifier is [`crate::jsonrpc`].

pub(crate) mod classify;
pub(crate) mod findings;
pub(crate) mod judge;
pub(crate) mod retry_after;
