//! The decision trace (`Trace`), asked for per request or for every request.

use std::time::Duration;

use failnext::{Class, Cooldown, EndpointId, Error, NotTried, RequestBuilderExt, Trace, TraceStep};
use failnext_loopback::{Action, Reply};

use crate::support::*;

fn steps<'a>(trace: &'a Trace, id: &str) -> &'a [TraceStep] {
    trace.entry(id).unwrap_or_else(|| panic!("no {id} in {trace}")).steps()
}

#[tokio::test(start_paused = true)]
async fn a_deadline_error_carries_a_trace_naming_every_endpoint() {
    let (a, b, c) = (acting(Action::Hang).await, acting(Action::Hang).await, acting(Action::Hang).await);
    let failover = builder([("primary", a.url("/")), ("backup", b.url("/")), ("third", c.url("/"))])
        .deadline(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = client(failover).get("http://127.0.0.1:9/").allow_failover().trace().send().await.unwrap_err();
    let trace = Error::from_middleware(&err).unwrap().trace().expect("asked for").clone();
    assert!(
        matches!(steps(&trace, "primary"), [TraceStep::Tried { attempt: 1, class: Class::Transport, .. }]),
        "{trace}"
    );
    for id in ["backup", "third"] {
        assert_eq!(steps(&trace, id), [TraceStep::NotTried(NotTried::DeadlinePassed)], "{trace}");
        assert!(trace.to_string().contains(&format!("{id}: not tried: deadline passed")), "{trace}");
    }
    let text = trace.to_string();
    assert!(text.starts_with("request trace:") && text.lines().count() == 4, "{text}");
}

#[tokio::test]
async fn a_response_carries_its_trace_with_every_reason() {
    let ok = acting(Action::Reply(Reply::new(200).text("ok"))).await;
    let unavailable = acting(Action::Reply(Reply::new(503).text("no"))).await;
    let failover = builder([
        ("excluded", ok.url("/")),
        ("ineligible", ok.url("/")),
        ("busy", unavailable.url("/")),
        ("good", ok.url("/")),
        ("spare", ok.url("/")),
    ])
    .eligible(|id: &EndpointId| id.as_str() != "ineligible")
    .cooldown(Cooldown::adaptive())
    .no_attempt_timeout()
    .trace(true)
    .build()
    .unwrap();
    let resp = client(failover)
        .get("http://127.0.0.1:9/")
        .allow_failover()
        .exclude_endpoints(["excluded"])
        .send()
        .await
        .unwrap();
    let trace = resp.extensions().get::<Trace>().expect("trace(true): every request").clone();
    assert_eq!(steps(&trace, "excluded"), [TraceStep::Excluded]);
    assert_eq!(steps(&trace, "ineligible"), [TraceStep::Ineligible]);
    assert!(
        matches!(steps(&trace, "busy"), [TraceStep::Tried { attempt: 1, class: Class::Trigger, .. }]),
        "{trace}"
    );
    assert!(
        matches!(steps(&trace, "good"), [TraceStep::Tried { attempt: 2, class: Class::Answer, .. }]),
        "{trace}"
    );
    assert!(matches!(steps(&trace, "spare"), [TraceStep::NotTried(_)]), "{trace}");
}

#[tokio::test]
async fn no_trace_unless_asked() {
    let ok = acting(Action::Reply(Reply::new(200).text("ok"))).await;
    let failover = builder([("only", ok.url("/"))]).build().unwrap();
    let resp = client(failover).get("http://127.0.0.1:9/").send().await.unwrap();
    assert!(resp.extensions().get::<Trace>().is_none());
}
