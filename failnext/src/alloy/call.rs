//! Per-call control through alloy: failnext's request options carried in alloy's request
//! metadata, and where the serving endpoint is written back.

use std::sync::{Arc, Mutex};

use alloy_json_rpc::RequestMeta;

use crate::{EndpointId, ExcludedEndpoints, Permission, PreferredEndpoint};

/// failnext's per-request options on one alloy call, carried in its [`RequestMeta`]
/// extensions into the transport, which hands them to `Failover` (what
/// [`RequestBuilderExt`](crate::RequestBuilderExt) is for reqwest users).
///
/// With alloy, a call's metadata is reached with `map_meta` (on `RpcCall`, and on a
/// provider's `ProviderCall`):
///
/// ```ignore
/// use failnext::alloy::CallExt;
///
/// let served = ServedByCell::new();
/// let n = provider
///     .get_block_number()
///     .map_meta(|meta| meta.prefer_endpoint("archive").exclude_endpoints(["flaky"]).record_served_by(&served))
///     .unwrap_or_else(|call| call) // a call that is already running keeps its metadata
///     .await?;
/// println!("{n} from {:?}", served.get());
/// ```
///
/// In a batch, a call's [`deny_failover`](CallExt::deny_failover) denies the whole packet,
/// exclusions add up, and the first preference wins.
pub trait CallExt: Sized {
    /// This call may fail over, whatever the [`MethodTable`](crate::alloy::MethodTable) says.
    fn allow_failover(self) -> Self;
    /// This call must not fail over, whatever the table says.
    fn deny_failover(self) -> Self;
    /// Never send this call to these endpoints. Calls accumulate.
    fn exclude_endpoints<I, T>(self, ids: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<EndpointId>;
    /// Try this endpoint first for this call.
    fn prefer_endpoint(self, id: impl Into<EndpointId>) -> Self;
    /// Write the endpoint that answers this call into `cell`.
    fn record_served_by(self, cell: &ServedByCell) -> Self;

    /// Keep the request's [`Trace`](crate::Trace) (every endpoint and what happened to it:
    /// the skips of the packet's scope, overruled answers, attempts) and write it into `cell`
    /// when the call's packet ends, answered or not.
    fn record_trace(self, cell: &TraceCell) -> Self;
}

impl CallExt for RequestMeta {
    fn allow_failover(mut self) -> Self {
        self.extensions_mut().insert(Permission::Allow);
        self
    }

    fn deny_failover(mut self) -> Self {
        self.extensions_mut().insert(Permission::Deny);
        self
    }

    fn exclude_endpoints<I, T>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<EndpointId>,
    {
        ExcludedEndpoints::add_to(self.extensions_mut(), ids.into_iter().map(Into::into));
        self
    }

    fn prefer_endpoint(mut self, id: impl Into<EndpointId>) -> Self {
        self.extensions_mut().insert(PreferredEndpoint(id.into()));
        self
    }

    fn record_served_by(mut self, cell: &ServedByCell) -> Self {
        self.extensions_mut().insert(cell.clone());
        self
    }

    fn record_trace(mut self, cell: &TraceCell) -> Self {
        self.extensions_mut().insert(cell.clone());
        self
    }
}

/// Where the transport writes the [`Trace`](crate::Trace) of a call's packet
/// ([`CallExt::record_trace`]). Cheap to clone; clones share the value.
#[derive(Clone, Debug, Default)]
pub struct TraceCell(Arc<Mutex<Option<crate::Trace>>>);

impl TraceCell {
    /// An empty cell.
    pub fn new() -> TraceCell {
        TraceCell::default()
    }

    /// The trace of the last packet that carried this cell, once it ended.
    pub fn get(&self) -> Option<crate::Trace> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set(&self, trace: &crate::Trace) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(trace.clone());
    }
}

/// Where the transport writes the endpoint that answered a call (see
/// [`CallExt::record_served_by`]). Cheap to clone; clones share the value.
#[derive(Clone, Debug, Default)]
pub struct ServedByCell(Arc<Mutex<Option<EndpointId>>>);

impl ServedByCell {
    /// An empty cell.
    pub fn new() -> ServedByCell {
        ServedByCell::default()
    }

    /// The endpoint that answered the call, once it has.
    pub fn get(&self) -> Option<EndpointId> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set(&self, id: &EndpointId) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(id.clone());
    }
}
