//! Request-scoped options read from `http::Extensions`, and the `ServedBy` response marker.

use std::time::Duration;

use http::Extensions;

use crate::request::endpoint::EndpointId;
use crate::request::permission::Permission;

/// Endpoints a request must not use. Request-scoped: stored in the request's extensions.
///
/// Exclusion only removes endpoints from this request's consideration. It does not change
/// permission to fail over, replayability, cooldown or triggers, and a preferred endpoint that
/// is also excluded stays excluded. An id that names no configured endpoint makes the request
/// fail with an [unknown endpoint](crate::Error::is_unknown_endpoint) error before anything
/// is sent.
///
/// [`RequestBuilderExt::exclude_endpoints`](crate::RequestBuilderExt::exclude_endpoints)
/// adds to the ids already present; inserting this type directly replaces them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExcludedEndpoints(pub Vec<EndpointId>);

impl ExcludedEndpoints {
    /// Adds `ids` to the exclusions already in `ext` (or makes them).
    pub(crate) fn add_to(ext: &mut Extensions, ids: impl Iterator<Item = EndpointId>) {
        match ext.get_mut::<ExcludedEndpoints>() {
            Some(excluded) => excluded.0.extend(ids),
            None => {
                ext.insert(ExcludedEndpoints(ids.collect()));
            }
        }
    }
}

/// The endpoint a request tries first. Request-scoped: stored in the request's extensions.
///
/// If it is eligible and not excluded, it is tried first and the others keep their configured
/// order. It is not a pin: the request may still fail over to the others, and preference does
/// not bypass eligibility, exclusion, cooldown, permission, replayability or triggers. An
/// unknown id makes the request fail with an
/// [unknown endpoint](crate::Error::is_unknown_endpoint) error before anything is sent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PreferredEndpoint(pub EndpointId);

/// The time a request may take in all, attempts, waits and skips together. Request-scoped:
/// stored in the request's extensions ([`RequestBuilderExt::deadline`]); it replaces the
/// builder's [`deadline`](crate::FailoverBuilder::deadline) for this request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestDeadline(pub Duration);

/// Asks for this request's [`Trace`](crate::Trace). Request-scoped: stored in the request's
/// extensions ([`RequestBuilderExt::trace`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TraceRequest;

/// Which endpoint produced a response, in the extensions of every response failnext returns.
///
/// Use it to prefer the same provider for a follow-up, or to exclude it when its HTTP 200
/// carried a JSON-RPC error:
///
/// ```no_run
/// # async fn demo(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), reqwest_middleware::Error> {
/// use failnext::{RequestBuilderExt, ServedBy};
///
/// let resp = client.post("http://127.0.0.1:8545/").allow_failover().send().await?;
/// let served_by = resp.extensions().get::<ServedBy>().cloned();
/// if let Some(ServedBy(id)) = served_by {
///     // Ask the same provider first for the follow-up read.
///     client.post("http://127.0.0.1:8545/").prefer_endpoint(id).allow_failover().send().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServedBy(pub EndpointId);

/// Reads [`ServedBy`] from a response without spelling out the extension lookup.
///
/// ```no_run
/// # async fn demo(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), reqwest_middleware::Error> {
/// use failnext::ResponseExt;
///
/// let resp = client.get("http://127.0.0.1:8545/").send().await?;
/// let who = resp.served_by().cloned(); // keep it before the body consumes the response
/// let body = resp.text().await?;
/// # drop((who, body)); Ok(()) }
/// ```
pub trait ResponseExt {
    /// The endpoint that produced this response, if failnext returned it.
    fn served_by(&self) -> Option<&EndpointId>;
}

impl ResponseExt for reqwest::Response {
    fn served_by(&self) -> Option<&EndpointId> {
        self.extensions().get::<ServedBy>().map(|s| &s.0)
    }
}

/// Adds failnext's request-scoped options to a `reqwest_middleware::RequestBuilder`.
///
/// Each method stores a value in the request's extensions, so the same options can be set
/// without this trait with `with_extension` (or client-wide with reqwest-middleware's
/// `Extension` initialiser).
///
/// This trait is sealed: it is implemented for `reqwest_middleware::RequestBuilder` only and
/// cannot be implemented outside failnext, so that new options can be added to it without a
/// breaking change. To set an option on anything else, insert its extension type
/// ([`Permission`](crate::Permission), [`ExcludedEndpoints`], [`PreferredEndpoint`],
/// [`RequestDeadline`], [`TraceRequest`]) yourself.
///
/// ```no_run
/// # async fn demo(client: reqwest_middleware::ClientWithMiddleware) -> Result<(), reqwest_middleware::Error> {
/// use failnext::RequestBuilderExt;
///
/// let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
/// let resp = client
///     .post("http://127.0.0.1:8545/")
///     .header("content-type", "application/json")
///     .body(body)
///     .allow_failover() // a read: safe to send to another provider
///     .exclude_endpoints(["flaky"])
///     .send()
///     .await?;
/// # drop(resp); Ok(()) }
/// ```
pub trait RequestBuilderExt: sealed::Sealed + Sized {
    /// This request may fail over, whatever the policy or the method says.
    fn allow_failover(self) -> Self;

    /// This request must not fail over, whatever the policy or the method says.
    fn deny_failover(self) -> Self;

    /// Never use these endpoints for this request. Calls accumulate.
    fn exclude_endpoints<I, T>(self, ids: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<EndpointId>;

    /// Try this endpoint first for this request. The latest call wins.
    fn prefer_endpoint(self, id: impl Into<EndpointId>) -> Self;

    /// This request takes at most `deadline` in all (every attempt, wait and skip), whatever
    /// the builder's [`deadline`](crate::FailoverBuilder::deadline) says; see there.
    fn deadline(self, deadline: Duration) -> Self;

    /// Keep a [`Trace`](crate::Trace) of this request: on the response's extensions, or on
    /// the error ([`Error::trace`](crate::Error::trace)).
    fn trace(self) -> Self;
}

mod sealed {
    /// Keeps [`RequestBuilderExt`](crate::RequestBuilderExt) from being implemented outside
    /// this crate: a public trait in a private module.
    ///
    /// ```compile_fail,E0277
    /// struct Mine;
    /// impl failnext::RequestBuilderExt for Mine {
    ///     fn allow_failover(self) -> Self { self }
    ///     fn deny_failover(self) -> Self { self }
    ///     fn exclude_endpoints<I, T>(self, _: I) -> Self
    ///     where I: IntoIterator<Item = T>, T: Into<failnext::EndpointId> { self }
    ///     fn prefer_endpoint(self, _: impl Into<failnext::EndpointId>) -> Self { self }
    ///     fn deadline(self, _: std::time::Duration) -> Self { self }
    ///     fn trace(self) -> Self { self }
    /// }
    /// ```
    pub trait Sealed {}

    impl Sealed for reqwest_middleware::RequestBuilder {}
}

impl RequestBuilderExt for reqwest_middleware::RequestBuilder {
    fn allow_failover(self) -> Self {
        self.with_extension(Permission::Allow)
    }

    fn deny_failover(self) -> Self {
        self.with_extension(Permission::Deny)
    }

    fn exclude_endpoints<I, T>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<EndpointId>,
    {
        ExcludedEndpoints::add_to(self.extensions(), ids.into_iter().map(Into::into));
        self
    }

    fn prefer_endpoint(self, id: impl Into<EndpointId>) -> Self {
        self.with_extension(PreferredEndpoint(id.into()))
    }

    fn deadline(self, deadline: Duration) -> Self {
        self.with_extension(RequestDeadline(deadline))
    }

    fn trace(self) -> Self {
        self.with_extension(TraceRequest)
    }
}

/// The options of one request, read once before anything is sent.
#[derive(Debug, Default)]
pub(crate) struct RequestOptions<'a> {
    pub(crate) permission: Option<Permission>,
    pub(crate) excluded: &'a [EndpointId],
    pub(crate) preferred: Option<&'a EndpointId>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) trace: bool,
}

impl<'a> RequestOptions<'a> {
    pub(crate) fn read(ext: &'a Extensions) -> RequestOptions<'a> {
        RequestOptions {
            permission: ext.get::<Permission>().copied(),
            excluded: ext.get::<ExcludedEndpoints>().map_or(&[], |e| e.0.as_slice()),
            preferred: ext.get::<PreferredEndpoint>().map(|p| &p.0),
            deadline: ext.get::<RequestDeadline>().map(|d| d.0),
            trace: ext.get::<TraceRequest>().is_some(),
        }
    }
}
