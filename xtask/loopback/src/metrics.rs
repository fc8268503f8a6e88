//! A `metrics` recorder for tests: it keeps every counter and every histogram's sample count
//! (gauges: their last value, times 1000, rounded) by name and sorted labels, e.g.
//! `failnext_attempts_total{class=answer,endpoint=backup}`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// Keeps counters (name and sorted labels) and histogram sample counts.
/// What the recorder kept.
#[derive(Debug, Default)]
pub struct Kept(Mutex<BTreeMap<String, Arc<Count>>>);

#[derive(Debug, Default)]
struct Count(AtomicU64);

impl CounterFn for Count {
    fn increment(&self, n: u64) {
        self.0.fetch_add(n, Ordering::SeqCst);
    }
    fn absolute(&self, n: u64) {
        self.0.store(n, Ordering::SeqCst);
    }
}

impl GaugeFn for Count {
    fn increment(&self, n: f64) {
        self.0.fetch_add((n * 1000.0) as u64, Ordering::SeqCst);
    }
    fn decrement(&self, n: f64) {
        self.0.fetch_sub((n * 1000.0) as u64, Ordering::SeqCst);
    }
    fn set(&self, n: f64) {
        self.0.store((n * 1000.0).round() as u64, Ordering::SeqCst);
    }
}

impl HistogramFn for Count {
    fn record(&self, _: f64) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Kept {
    fn slot(&self, key: &Key) -> Arc<Count> {
        let mut labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        self.0.lock().unwrap().entry(name).or_default().clone()
    }

    /// The value kept under `name` (0 when none).
    pub fn get(&self, name: &str) -> u64 {
        self.0.lock().unwrap().get(name).map_or(0, |c| c.0.load(Ordering::SeqCst))
    }

    /// Every name kept.
    pub fn names(&self) -> Vec<String> {
        self.0.lock().unwrap().keys().cloned().collect()
    }
}

/// The recorder: install it with `metrics::with_local_recorder`.
#[derive(Debug)]
pub struct Rec(pub Arc<Kept>);

impl Recorder for Rec {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.0.slot(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.0.slot(key))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.0.slot(key))
    }
}
