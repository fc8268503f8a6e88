//! The failover budget (`Budget`, opt-in), under paused tokio time, with every provider
//! refusing connections and no breaker (so only the budget limits the failover attempts).

use std::time::Duration;

use failnext::{Budget, Cooldown, Error, Event, RequestBuilderExt};
use failnext_loopback::refused_url;

use crate::support::*;

/// Sends 100 reads over 10 s to `n` refused endpoints; returns the attempts made.
async fn attempts_with(n: usize, budget: Option<Budget>) -> (usize, usize) {
    let attempts = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = attempts.clone();
    let ids: Vec<String> = (0..n).map(|i| format!("e{i}")).collect();
    let mut b = builder(ids.iter().map(|id| (id.as_str(), refused_url("/"))))
        .cooldown(Cooldown::disabled())
        .no_attempt_timeout()
        .on_event(move |e: &Event<'_>| {
            if let Event::Attempt { .. } = e {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
    if let Some(budget) = budget {
        b = b.failover_budget(budget);
    }
    let c = client(b.build().unwrap());
    let mut spent = 0;
    for _ in 0..100 {
        let err = c.get("http://127.0.0.1:9/").allow_failover().send().await.unwrap_err();
        spent += usize::from(Error::from_middleware(&err).is_some_and(Error::is_budget_spent));
        tokio::time::advance(Duration::from_millis(100)).await;
    }
    (attempts.load(std::sync::atomic::Ordering::SeqCst), spent)
}

#[tokio::test(start_paused = true)]
async fn with_every_provider_failing_the_budget_keeps_failovers_within_its_share() {
    let budget = Budget::new(0.1).min_per_sec(1).max_balance(5);
    // 100 requests: at most 5 (the balance) + 100 × 0.1 (deposits) + 10 s × 1 (floor) = 25
    // failover attempts, on top of the 100 first attempts.
    let (three, spent) = attempts_with(3, Some(budget)).await;
    assert!((100..=125).contains(&three), "{three} attempts for 100 requests to 3 endpoints");
    assert!(spent >= 75, "most requests stopped at their first attempt: {spent}");
    let (five, _) = attempts_with(5, Some(budget)).await;
    assert!(five <= 125, "the load does not grow with the number of endpoints: {five} with 5");
    let (unbounded, _) = attempts_with(3, None).await;
    assert_eq!(unbounded, 300, "without a budget every request tries every endpoint");
}

#[test]
fn a_negative_ratio_is_rejected() {
    let err = builder([("a", "http://127.0.0.1:1/".to_owned())])
        .failover_budget(Budget::new(-1.0))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("budget"), "{err}");
}
