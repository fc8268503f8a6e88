//! Catalogue §K: events, C115-C130 as they apply to Rust.
//!
//! Not applicable: the ReplayError event and C125 (no GetBody factory; the Rust counterpart,
//! `NotReplayable`, belongs to replay), C129/C130 (a hook cannot cancel a Go context; a Rust
//! caller cancels by dropping the future, pinned below). "Bodies closed" in C123-C128 maps to
//! values dropped while the panic unwinds, which Rust guarantees; these tests pin that the panic
//! reaches the caller, that no `Cancelled` result is emitted while unwinding, and that the
//! middleware keeps working afterwards.
//!
//! Since 0.2 every `Attempt` event is followed by its `Judged` event; the exact sequences here
//! record it (`Recorder::with_judged`), the claims are those of 0.1.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, mpsc};
use std::time::Duration;

use failnext::{Cooldown, EndpointId, Event, Failover, RequestBuilderExt, ResultOutcome};
use futures::FutureExt;

use crate::support::events::*;
use crate::support::*;
use failnext_loopback::{Action, Server, refused_url};

const BOUND: Duration = Duration::from_secs(20);
const HOUR: Duration = Duration::from_secs(3600);

async fn bounded<F: std::future::Future>(fut: F) -> F::Output {
    tokio::time::timeout(BOUND, fut).await.expect("the request finished in time")
}

// C115
#[tokio::test]
async fn first_attempt_success_emits_attempt_then_result() {
    let healthy = status(200).await;
    let rec = Recorder::with_judged();
    let failover =
        builder([("e1", healthy.url()), ("e2", refused_url("/rpc"))]).on_event(rec.hook()).build().unwrap();
    bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), answered("e1", 1), result("e1", 200)]);
}

// C116
#[tokio::test]
async fn transport_failure_then_success_emits_an_error_attempt() {
    let healthy = status(200).await;
    let rec = Recorder::with_judged();
    let failover =
        builder([("e1", refused_url("/rpc")), ("e2", healthy.url())]).on_event(rec.hook()).build().unwrap();
    bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(
        rec.shapes(),
        [
            attempt_err("e1", 1),
            transport("e1", 1),
            attempt("e2", 2, 200),
            answered("e2", 2),
            result("e2", 200)
        ]
    );
}

// C117: a trigger response is an attempt with a status, not an error.
#[tokio::test]
async fn trigger_then_success_emits_a_status_attempt_without_error() {
    let (unavailable, healthy) = (status(503).await, status(200).await);
    let rec = Recorder::with_judged();
    let failover =
        builder([("e1", unavailable.url()), ("e2", healthy.url())]).on_event(rec.hook()).build().unwrap();
    bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(
        rec.take(),
        [
            attempt("e1", 1, 503),
            trigger("e1", 1),
            attempt("e2", 2, 200),
            answered("e2", 2),
            result("e2", 200)
        ]
    );
}

fn assert_one_result_last(events: &[Ev], path: &str) {
    let results = events.iter().filter(|ev| matches!(ev, Ev::Result(..))).count();
    assert_eq!(results, 1, "{path}: {events:?}");
    assert!(matches!(events.last(), Some(Ev::Result(..))), "{path}: {events:?}");
}

// C118, C122: exactly one Result, and it is last, on every path (cancellation: see below).
#[tokio::test]
async fn exactly_one_result_and_it_is_last_in_every_path() {
    let (healthy, unavailable) = (status(200).await, status(503).await);
    let (refused, refused2) = (refused_url("/rpc"), refused_url("/rpc"));
    let rec = Recorder::with_judged();
    let eligible_all = Arc::new(AtomicBool::new(true));
    let flag = eligible_all.clone();
    let failover = builder([("down", refused), ("busy", unavailable.url()), ("ok", healthy.url())])
        .eligible(move |_: &EndpointId| flag.load(Ordering::SeqCst))
        .cooldown(Cooldown::disabled())
        .on_event(rec.hook())
        .build()
        .unwrap();
    let c = client(failover);
    let url = "http://127.0.0.1:9/";

    bounded(c.get(url).send()).await.unwrap();
    assert_eq!(
        rec.shapes(),
        [
            attempt_err("down", 1),
            transport("down", 1),
            attempt("busy", 2, 503),
            trigger("busy", 2),
            attempt("ok", 3, 200),
            answered("ok", 3),
            result("ok", 200)
        ]
    );

    bounded(c.get(url).exclude_endpoints(["ok"]).send()).await.unwrap();
    assert_eq!(
        rec.shapes(),
        [
            attempt_err("down", 1),
            transport("down", 1),
            attempt("busy", 2, 503),
            trigger("busy", 2),
            result("busy", 503)
        ]
    );

    bounded(c.get(url).exclude_endpoints(["busy", "ok"]).send()).await.unwrap_err();
    assert_eq!(rec.shapes(), [attempt_err("down", 1), transport("down", 1), result_err()]);

    bounded(c.post(url).body("{}").send()).await.unwrap_err();
    assert_eq!(
        rec.shapes(),
        [attempt_err("down", 1), transport("down", 1), result_err()],
        "denied continuation"
    );

    bounded(c.get(url).exclude_endpoints(["down", "busy", "ok"]).send()).await.unwrap_err();
    assert_eq!(rec.shapes(), [result_err()], "all excluded");

    bounded(c.get(url).prefer_endpoint("missing").send()).await.unwrap_err();
    assert_eq!(rec.shapes(), [result_err()], "unknown preferred");

    bounded(c.get(url).exclude_endpoints(["missing"]).send()).await.unwrap_err();
    assert_eq!(rec.shapes(), [result_err()], "unknown excluded");

    eligible_all.store(false, Ordering::SeqCst);
    bounded(c.post(url).body("one").send()).await.unwrap_err();
    assert_eq!(rec.shapes(), [result_err()], "all ineligible");

    // All cooling: skips, then the one Result.
    let only = status(503).await;
    let rec = Recorder::with_judged();
    let failover = builder([("a", only.url()), ("b", refused2)])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let c = client(failover);
    bounded(c.get(url).send()).await.unwrap();
    assert_one_result_last(&rec.take(), "retained after a refused backup");
    bounded(c.get(url).send()).await.unwrap_err();
    assert_eq!(rec.shapes(), [skip("a"), skip("b"), result_err()]);
}

// C118, §4.15: the Result event carries the very error the caller receives.
#[tokio::test]
async fn result_event_carries_the_error_returned_to_the_caller() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let failover = builder([("e1", refused_url("/rpc")), ("e2", refused_url("/rpc"))])
        .on_event(move |ev: &Event<'_>| {
            if let Event::Result { endpoint, outcome: ResultOutcome::Error(err) } = ev {
                assert!(endpoint.is_none());
                sink.lock().unwrap().push((err.to_string(), format!("{err:?}")));
            }
        })
        .build()
        .unwrap();
    let c = client(failover);
    for req in [c.get("http://127.0.0.1:9/"), c.get("http://127.0.0.1:9/").prefer_endpoint("missing")] {
        let err = bounded(req.send()).await.unwrap_err();
        let recorded = seen.lock().unwrap().pop().expect("a Result event with the error");
        assert_eq!(recorded, (err.to_string(), format!("{err:?}")));
    }
}

/// A hook that blocks inside the first Attempt event until released.
struct Gate {
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

// C119: the request does not go on while the hook runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_delivered_synchronously() {
    let healthy = status(200).await;
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    let gate = Gate { entered: Mutex::new(entered_tx), release: Mutex::new(release_rx) };
    let rec = Recorder::with_judged();
    let record = rec.hook();
    let failover = builder([("e1", healthy.url())])
        .on_event(move |ev: &Event<'_>| {
            if matches!(ev, Event::Attempt { .. }) {
                gate.entered.lock().unwrap().send(()).unwrap();
                let released = gate.release.lock().unwrap().recv_timeout(BOUND);
                assert!(released.is_ok(), "the test never released the hook");
            }
            record(ev);
        })
        .build()
        .unwrap();
    let c = client(failover);
    let request = tokio::spawn(async move { c.get("http://127.0.0.1:9/").send().await.map(|r| r.status()) });
    let entered = tokio::task::spawn_blocking(move || entered_rx.recv_timeout(BOUND)).await.unwrap();
    assert!(entered.is_ok(), "the hook was never called");
    assert_eq!(healthy.hits(), 1);
    assert!(!request.is_finished(), "the request returned while its hook was still running");
    assert!(rec.take().is_empty(), "nothing is delivered while the hook blocks");
    release_tx.send(()).unwrap();
    let status = bounded(request).await.unwrap().unwrap();
    assert_eq!(status, 200);
    assert_eq!(rec.shapes(), [attempt("e1", 1, 200), answered("e1", 1), result("e1", 200)]);
}

/// Counts hooks running at once; each waits (bounded) until `want` have been inside together.
#[derive(Default)]
struct Overlap {
    state: Mutex<(usize, usize)>,
    changed: Condvar,
}

impl Overlap {
    fn enter_and_wait(&self, want: usize) {
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        state.1 = state.1.max(state.0);
        self.changed.notify_all();
        let (mut state, _) = self.changed.wait_timeout_while(state, BOUND, |s| s.1 < want).unwrap();
        state.0 -= 1;
    }

    fn max_inside(&self) -> usize {
        self.state.lock().unwrap().1
    }
}

// C120: hooks of two requests run at the same time; neither waits for the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_of_different_requests_may_run_at_the_same_time() {
    let healthy = status(200).await;
    let overlap = Arc::new(Overlap::default());
    let inside = overlap.clone();
    let failover = builder([("e1", healthy.url())])
        .on_event(move |ev: &Event<'_>| {
            if matches!(ev, Event::Attempt { .. }) {
                inside.enter_and_wait(2);
            }
        })
        .build()
        .unwrap();
    // Two OS threads, each with its own runtime, send one request each through the same
    // middleware.
    let statuses = tokio::task::spawn_blocking(move || {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let failover = failover.clone();
                    s.spawn(move || {
                        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                        rt.block_on(async {
                            let c = client(failover);
                            bounded(c.get("http://127.0.0.1:9/").send()).await.map(|r| r.status().as_u16())
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap().unwrap()).collect::<Vec<_>>()
        })
    })
    .await
    .unwrap();
    assert_eq!(statuses, [200, 200]);
    assert_eq!(overlap.max_inside(), 2, "the two hooks never ran at the same time");
}

// C121: the hook runs outside failnext's locks, so it may query cooldown state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_may_query_cooldown_state_without_deadlock() {
    let only = status(503).await;
    let this: Arc<OnceLock<Failover>> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (cell, sink) = (this.clone(), seen.clone());
    let rec = Recorder::with_judged();
    let record = rec.hook();
    let failover = builder([("only", only.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(move |ev: &Event<'_>| {
            record(ev);
            let failover = cell.get().expect("set before any request");
            match ev {
                Event::CooldownSkip { endpoint } => {
                    sink.lock().unwrap().push(("skip", failover.is_cooling_down(endpoint)));
                }
                Event::Attempt { endpoint, .. } => {
                    sink.lock().unwrap().push(("attempt", failover.is_cooling_down(endpoint)));
                }
                Event::Result { .. } => {
                    sink.lock().unwrap().push(("result", failover.is_cooling_down("only")));
                }
                _ => {}
            }
        })
        .build()
        .unwrap();
    assert!(this.set(failover.clone()).is_ok());
    let c = client(failover);
    // Spawned, so that a deadlocked worker cannot stop the bound from firing.
    let first = tokio::spawn({
        let c = c.clone();
        async move { c.get("http://127.0.0.1:9/").send().await.map(|r| r.status()) }
    });
    assert_eq!(bounded(first).await.unwrap().unwrap(), 503);
    let second = tokio::spawn(async move { c.get("http://127.0.0.1:9/").send().await.map(|r| r.status()) });
    let err = bounded(second).await.unwrap().unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());
    assert_eq!(
        rec.shapes(),
        [attempt("only", 1, 503), trigger("only", 1), result("only", 503), skip("only"), result_err()]
    );
    // The attempt event comes before the failure is recorded; the skip sees the cooldown.
    assert_eq!(
        *seen.lock().unwrap(),
        [("attempt", false), ("result", true), ("skip", true), ("result", true)]
    );
}

/// A recording hook that panics (once) on the first event matching `when`.
fn panicking_hook(
    rec: &Recorder,
    when: impl Fn(&Event<'_>) -> bool + Send + Sync + 'static,
) -> impl Fn(&Event<'_>) + Send + Sync + 'static {
    let record = rec.hook();
    let armed = AtomicBool::new(true);
    move |ev: &Event<'_>| {
        record(ev);
        if when(ev) && armed.swap(false, Ordering::SeqCst) {
            std::panic::panic_any(PANIC);
        }
    }
}

const PANIC: &str = "hook panicked on purpose";

/// Sends the request; returns the panic payload's message, failing if the request did not panic.
async fn send_expecting_panic(req: reqwest_middleware::RequestBuilder) -> String {
    let caught = bounded(AssertUnwindSafe(req.send()).catch_unwind()).await;
    let payload = caught.expect_err("the hook's panic did not reach the caller");
    payload.downcast_ref::<&str>().map(|s| (*s).to_owned()).unwrap_or_default()
}

// C123: a panic on the second Attempt event reaches the caller; no Result (and no
// `Cancelled`) is emitted while unwinding; later requests work.
#[tokio::test]
async fn panic_in_attempt_hook_reaches_the_caller_and_later_requests_work() {
    let (unavailable, healthy) = (status(503).await, status(200).await);
    let rec = Recorder::with_judged();
    let hook = panicking_hook(&rec, |ev| matches!(ev, Event::Attempt { attempt: 2, .. }));
    let failover = builder([("e1", unavailable.url()), ("e2", healthy.url())])
        .cooldown(Cooldown::new(2, HOUR))
        .on_event(hook)
        .build()
        .unwrap();
    let c = client(failover.clone());
    assert_eq!(send_expecting_panic(c.get("http://127.0.0.1:9/")).await, PANIC);
    assert_eq!(rec.shapes(), [attempt("e1", 1, 503), trigger("e1", 1), attempt("e2", 2, 200)]);
    assert_eq!((unavailable.hits(), healthy.hits()), (1, 1));

    let resp = bounded(c.get("http://127.0.0.1:9/").send()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        rec.shapes(),
        [
            attempt("e1", 1, 503),
            trigger("e1", 1),
            attempt("e2", 2, 200),
            answered("e2", 2),
            result("e2", 200)
        ]
    );
    assert!(failover.is_cooling_down("e1"), "cooldown state still works after the panic");
}

// C124
#[tokio::test]
async fn panic_in_cooldown_skip_hook_reaches_the_caller() {
    let only = status(503).await;
    let rec = Recorder::with_judged();
    let hook = panicking_hook(&rec, |ev| matches!(ev, Event::CooldownSkip { .. }));
    let failover =
        builder([("only", only.url())]).cooldown(Cooldown::new(1, HOUR)).on_event(hook).build().unwrap();
    let c = client(failover);
    bounded(c.get("http://127.0.0.1:9/").send()).await.unwrap();
    rec.take();
    assert_eq!(send_expecting_panic(c.post("http://127.0.0.1:9/").body("one-shot")).await, PANIC);
    assert_eq!(rec.shapes(), [skip("only")]);
    assert_eq!(only.hits(), 1);
    let err = bounded(c.get("http://127.0.0.1:9/").send()).await.unwrap_err();
    assert!(failnext_error(&err).is_no_usable_endpoint());
    assert_eq!(rec.shapes(), [skip("only"), result_err()]);
}

// C126, C127, C128: a panic in the Result hook, for a response, a retained response, a
// failover error and a no-usable error; the request is never reported as cancelled, and the
// next request works.
#[tokio::test]
async fn panic_in_result_hook_reaches_the_caller() {
    let (healthy, unavailable) = (status(200).await, status(503).await);
    let cases = [
        ("success", vec![("e1", healthy.url())], true, result("e1", 200)),
        ("retained", vec![("e1", unavailable.url()), ("e2", refused_url("/rpc"))], true, result("e1", 503)),
        ("error", vec![("e1", refused_url("/rpc"))], true, result_err()),
        ("all ineligible", vec![("e1", healthy.url()), ("e2", healthy.url())], false, result_err()),
    ];
    for (path, endpoints, eligible, last) in cases {
        let rec = Recorder::with_judged();
        let hook = panicking_hook(&rec, |ev| matches!(ev, Event::Result { .. }));
        let failover = builder(endpoints)
            .eligible(move |_: &EndpointId| eligible)
            .cooldown(Cooldown::disabled())
            .on_event(hook)
            .build()
            .unwrap();
        let c = client(failover);
        assert_eq!(
            send_expecting_panic(c.post("http://127.0.0.1:9/").body("{}").allow_failover()).await,
            PANIC,
            "{path}"
        );
        let first = rec.shapes();
        assert_eq!(first.last(), Some(&last), "{path}: {first:?}");
        assert_one_result_last(&first, path);
        let _ = bounded(c.post("http://127.0.0.1:9/").body("{}").allow_failover().send()).await;
        assert_eq!(rec.shapes(), first, "{path}: the next request behaves the same, without a panic");
    }
    assert_eq!(healthy.hits(), 2, "the ineligible case sent nothing");
}

/// Sends a GET and drops it once the hanging server has read its head.
async fn send_and_drop_mid_attempt(c: &reqwest_middleware::ClientWithMiddleware, hanging: &Server) {
    let send = c.get("http://127.0.0.1:9/").send();
    bounded(async {
        tokio::select! {
            res = send => panic!("the hanging endpoint answered: {res:?}"),
            _ = hanging.wait_for_requests(1) => {}
        }
    })
    .await;
}

// C68 and C118 mapped: dropping the request future mid-attempt emits exactly one
// `Result { endpoint: None, outcome: Cancelled }` and records no cooldown.
#[tokio::test]
async fn dropped_request_emits_one_cancelled_result_and_records_no_cooldown() {
    let hanging = Server::always(Action::Hang).await;
    let healthy = status(200).await;
    let rec = Recorder::with_judged();
    let failover = builder([("hang", hanging.url("/rpc")), ("ok", healthy.url())])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    let c = client(failover.clone());
    send_and_drop_mid_attempt(&c, &hanging).await;
    assert_eq!(rec.take(), [Ev::Result(None, Res::Cancelled)]);
    assert!(!failover.is_cooling_down("hang"));
    assert_eq!(healthy.hits(), 0);
    // The middleware is not left in a bad state: the next request is served as usual.
    let resp = bounded(c.get("http://127.0.0.1:9/").exclude_endpoints(["hang"]).send()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(rec.shapes(), [attempt("ok", 1, 200), answered("ok", 1), result("ok", 200)]);
}

// C68 mapped: attempts completed before the drop keep their cooldown evidence.
#[tokio::test]
async fn dropped_request_keeps_the_evidence_of_completed_attempts() {
    let hanging = Server::always(Action::Hang).await;
    let rec = Recorder::with_judged();
    let failover = builder([("down", refused_url("/rpc")), ("hang", hanging.url("/rpc"))])
        .cooldown(Cooldown::new(1, HOUR))
        .on_event(rec.hook())
        .build()
        .unwrap();
    send_and_drop_mid_attempt(&client(failover.clone()), &hanging).await;
    assert_eq!(
        rec.shapes(),
        [attempt_err("down", 1), transport("down", 1), Ev::Result(None, Res::Cancelled)]
    );
    assert!(failover.is_cooling_down("down"));
    assert!(!failover.is_cooling_down("hang"));
}

// Event::Attempt's elapsed time covers only the attempt, so it is within the request's.
#[tokio::test]
async fn attempt_elapsed_is_within_the_request_duration() {
    let (unavailable, healthy) = (status(503).await, status(200).await);
    let elapsed = Arc::new(Mutex::new(Vec::new()));
    let sink = elapsed.clone();
    let failover = builder([("e1", unavailable.url()), ("e2", healthy.url())])
        .on_event(move |ev: &Event<'_>| {
            if let Event::Attempt { elapsed, .. } = ev {
                sink.lock().unwrap().push(*elapsed);
            }
        })
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    bounded(client(failover).get("http://127.0.0.1:9/").send()).await.unwrap();
    let total = started.elapsed();
    let elapsed = elapsed.lock().unwrap();
    assert_eq!(elapsed.len(), 2);
    assert!(elapsed.iter().sum::<Duration>() <= total, "{elapsed:?} > {total:?}");
}
