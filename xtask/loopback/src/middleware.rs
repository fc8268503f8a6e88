//! [`AttemptLog`]: a middleware that records the URL of every attempt.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use crate::lock;

/// A per-attempt middleware (added after `Failover`) that records the URL of every attempt.
#[derive(Clone, Debug, Default)]
pub struct AttemptLog {
    urls: Arc<Mutex<Vec<String>>>,
}

impl AttemptLog {
    /// The URLs attempted since the last call, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.urls))
    }
}

// `Middleware` is an `async_trait`; this is its expansion, written out to avoid a dependency.
impl reqwest_middleware::Middleware for AttemptLog {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        req: reqwest::Request,
        extensions: &'life1 mut http::Extensions,
        next: reqwest_middleware::Next<'life2>,
    ) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<reqwest::Response>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        lock(&self.urls).push(req.url().to_string());
        Box::pin(next.run(req, extensions))
    }
}
