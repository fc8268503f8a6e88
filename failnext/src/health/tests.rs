//! The rules' claims, through the one interface the crate uses ([`Health`]).
//! Test code only: declared `#[cfg(test)] mod tests;` in `mod.rs`, and test-only by itself.

#![cfg(test)]

use super::*;

const MIN: Duration = Duration::from_secs(60);
const MS: Duration = Duration::from_millis(1);

fn health(threshold: u32) -> Health {
    Health::new(Cooldown::new(threshold, MIN))
}

fn is_cooling(h: &Health) -> bool {
    h.cooling_until().is_some()
}

#[tokio::test(start_paused = true)]
async fn trips_at_threshold_and_expires_exactly_at_deadline() {
    let h = health(2);
    h.record(Evidence::Failure, None, None);
    assert!(!is_cooling(&h));
    h.record(Evidence::Failure, None, None);
    assert_eq!(h.cooling_until(), Some(Instant::now() + MIN));
    tokio::time::advance(MIN - Duration::from_millis(1)).await;
    assert!(is_cooling(&h));
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(!is_cooling(&h), "admitted at exactly cooling-until");
}

#[tokio::test(start_paused = true)]
async fn success_resets_streak_but_not_active_cooldown() {
    let h = health(2);
    h.record(Evidence::Failure, None, None);
    h.record(Evidence::Success, None, None);
    h.record(Evidence::Failure, None, None);
    assert!(!is_cooling(&h));
    h.record(Evidence::Failure, None, None);
    assert!(is_cooling(&h));
    h.record(Evidence::Success, None, None);
    assert!(is_cooling(&h));
}

#[tokio::test(start_paused = true)]
async fn failures_while_cooling_do_not_extend_and_are_discarded_at_expiry() {
    let h = health(3);
    for _ in 0..3 {
        h.record(Evidence::Failure, None, None);
    }
    tokio::time::advance(Duration::from_secs(30)).await;
    h.record(Evidence::Failure, None, None);
    h.record(Evidence::Failure, None, None);
    tokio::time::advance(Duration::from_secs(30)).await;
    assert!(!is_cooling(&h), "not extended by failures while cooling");
    h.record(Evidence::Failure, None, None);
    assert!(!is_cooling(&h), "fresh streak after expiry: the two failures while cooling are gone");
}

#[tokio::test(start_paused = true)]
async fn disabled_records_nothing() {
    let h = Health::new(Cooldown::disabled());
    for _ in 0..10 {
        h.record(Evidence::Failure, Some(MIN), None);
    }
    assert!(!is_cooling(&h));
    assert!(h.is_clean());
}

#[tokio::test(start_paused = true)]
async fn reference_rule_ignores_hints_and_neutral_evidence_and_reports_no_state() {
    let h = health(2);
    assert_eq!(h.record(Evidence::Failure, Some(MIN), None), None);
    assert!(!is_cooling(&h), "a hint does not trip the reference rule");
    h.record(Evidence::Neutral, None, None);
    assert_eq!(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None), None);
    assert_eq!(h.cooling_until(), Some(Instant::now() + MIN), "neutral kept the streak; the hint is ignored");
    assert!(matches!(h.admit(), Err(Skip::CoolingUntil(_))));
    assert!(h.force_trial().is_none(), "no last resort under the reference rule");
}

// ----- the adaptive breaker -----

fn breaker() -> Health {
    Health::new(Cooldown::adaptive())
}

fn open_for(state: Option<BreakerState>) -> Duration {
    match state {
        Some(BreakerState::Open { duration }) => duration,
        other => panic!("not opened: {other:?}"),
    }
}

fn trial(h: &Health) -> Permit<'_> {
    match h.admit() {
        Ok(Admit::Trial(permit)) => permit,
        other => panic!("no trial: {other:?}"),
    }
}

/// An adaptive breaker opened by three failures in a row.
fn tripped() -> Health {
    let h = breaker();
    for _ in 0..3 {
        h.record(Evidence::Failure, None, None);
    }
    h
}

fn within(d: Duration, nominal: Duration) -> bool {
    d >= nominal * 8 / 10 && d <= nominal * 12 / 10
}

#[tokio::test(start_paused = true)]
async fn three_failures_open_for_about_250_ms_and_a_healthy_breaker_stays_clean() {
    let h = breaker();
    h.record(Evidence::Success, None, None);
    assert!(h.is_clean(), "success on a clean breaker takes no lock");
    assert_eq!(h.record(Evidence::Failure, None, None), None);
    assert_eq!(h.record(Evidence::Failure, None, None), None);
    assert!(matches!(h.admit(), Ok(Admit::Closed)));
    let open = open_for(h.record(Evidence::Failure, None, None));
    assert!(within(open, Duration::from_millis(250)), "{open:?}");
    assert!(matches!(h.admit(), Err(Skip::Open { .. })));
    assert!(is_cooling(&h));
}

#[tokio::test(start_paused = true)]
async fn a_hint_opens_at_once_for_exactly_that_long() {
    let h = breaker();
    let hint = Duration::from_secs(5);
    assert_eq!(h.record(Evidence::Failure, Some(hint), None), Some(BreakerState::Open { duration: hint }));
    assert_eq!(h.cooling_until(), Some(Instant::now() + hint));
    h.record(Evidence::Failure, None, None);
    h.record(Evidence::Success, None, None);
    assert_eq!(h.cooling_until(), Some(Instant::now() + hint), "late outcomes change nothing");
    tokio::time::advance(hint).await;
    assert!(!is_cooling(&h));
    let _trial = trial(&h);
}

#[tokio::test(start_paused = true)]
async fn neutral_changes_nothing() {
    let h = breaker();
    h.record(Evidence::Failure, None, None);
    h.record(Evidence::Failure, None, None);
    for _ in 0..5 {
        assert_eq!(h.record(Evidence::Neutral, Some(MIN), None), None);
    }
    assert!(h.record(Evidence::Failure, None, None).is_some(), "the streak survived the neutral outcomes");
}

#[tokio::test(start_paused = true)]
async fn one_trial_at_a_time_and_a_dropped_permit_frees_it() {
    let h = breaker();
    let open = open_for(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None));
    tokio::time::advance(open).await;
    let permit = trial(&h);
    assert!(matches!(h.admit(), Err(Skip::HalfOpenBusy)));
    assert!(h.force_trial().is_none(), "the last resort does not take a held permit");
    drop(permit);
    let _again = trial(&h);
}

#[tokio::test(start_paused = true)]
async fn failed_trials_grow_the_open_time_to_the_cap_and_a_good_trial_closes() {
    let h = breaker();
    let mut open = open_for(h.record(Evidence::Failure, Some(MS), None));
    let mut seen = Vec::new();
    for _ in 0..12 {
        tokio::time::advance(open).await;
        let permit = trial(&h);
        open = open_for(h.record(Evidence::Failure, None, Some(permit.epoch())));
        drop(permit);
        seen.push(open);
    }
    let nominal = |k: u32| Duration::from_millis(250 * (1 << k)).min(Duration::from_secs(30));
    for (k, d) in seen.iter().enumerate() {
        let nominal = nominal(k as u32 + 1);
        assert!(within(*d, nominal) && *d <= Duration::from_secs(30), "trial {k}: {d:?} vs {nominal:?}");
    }
    tokio::time::advance(open).await;
    let permit = trial(&h);
    assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
    drop(permit);
    assert!(matches!(h.admit(), Ok(Admit::Closed)));
}

#[tokio::test(start_paused = true)]
async fn after_a_good_trial_one_failure_reopens_until_three_successes_in_a_row() {
    let h = breaker();
    for _ in 0..3 {
        h.record(Evidence::Failure, None, None);
    }
    let first = h.cooling_until().unwrap();
    tokio::time::advance(first - Instant::now()).await;
    let permit = trial(&h);
    assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
    drop(permit);
    let open = open_for(h.record(Evidence::Failure, None, None));
    assert!(within(open, Duration::from_millis(500)), "a relapse is a failed trial: {open:?}");
    tokio::time::advance(open).await;
    let permit = trial(&h);
    h.record(Evidence::Success, None, Some(permit.epoch()));
    drop(permit);
    h.record(Evidence::Success, None, None);
    h.record(Evidence::Success, None, None);
    assert!(h.is_clean(), "three successes in a row forget everything");
    assert_eq!(h.record(Evidence::Failure, None, None), None, "back to three failures");
}

#[tokio::test(start_paused = true)]
async fn max_open_caps_the_open_time_but_not_a_hint() {
    let h = Health::new(Cooldown::adaptive().max_open(Duration::from_millis(100)));
    for _ in 0..2 {
        h.record(Evidence::Failure, None, None);
    }
    assert!(open_for(h.record(Evidence::Failure, None, None)) <= Duration::from_millis(100));
    tokio::time::advance(Duration::from_millis(100)).await;
    let permit = trial(&h);
    assert_eq!(open_for(h.record(Evidence::Failure, Some(MIN), Some(permit.epoch()))), MIN);
}

#[tokio::test(start_paused = true)]
async fn the_last_resort_takes_the_trial_of_an_open_breaker_early() {
    let h = breaker();
    h.record(Evidence::Failure, Some(MIN), None);
    assert!(h.open_until().is_some());
    let Some(Admit::Trial(permit)) = h.force_trial() else { panic!("no forced trial") };
    assert!(matches!(h.admit(), Err(Skip::Open { .. })), "others still skip it");
    assert_eq!(
        h.record(Evidence::Success, None, Some(permit.epoch())),
        Some(BreakerState::Closed),
        "the trial's outcome"
    );
    drop(permit);
    assert!(matches!(h.admit(), Ok(Admit::Closed)));
}

#[tokio::test(start_paused = true)]
async fn while_open_or_half_open_only_the_trials_own_outcome_moves_the_breaker() {
    let h = breaker();
    let open = open_for(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None));
    // Attempts admitted before it opened finish late: older news, ignored.
    assert_eq!(h.record(Evidence::Failure, None, None), None);
    assert_eq!(h.record(Evidence::Success, None, None), None);
    tokio::time::advance(open).await;
    assert_eq!(h.record(Evidence::Failure, None, None), None, "half-open, no trial yet: still ignored");
    let permit = trial(&h);
    assert_eq!(h.record(Evidence::Failure, None, None), None, "a late failure does not end the trial");
    assert_eq!(h.record(Evidence::Failure, None, Some(permit.epoch() + 1)), None, "nor another epoch's");
    assert!(matches!(h.admit(), Err(Skip::HalfOpenBusy)), "the trial is still the one in flight");
    assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
    drop(permit);
    assert!(matches!(h.admit(), Ok(Admit::Closed)));
}

#[tokio::test(start_paused = true)]
async fn a_late_hint_lengthens_the_open_time_and_supersedes_the_trial() {
    let h = breaker();
    let open = open_for(h.record(Evidence::Failure, Some(Duration::from_secs(1)), None));
    tokio::time::advance(open).await;
    let permit = trial(&h);
    let five = Duration::from_secs(5);
    assert_eq!(h.record(Evidence::Failure, Some(five), None), Some(BreakerState::Open { duration: five }));
    assert_eq!(h.cooling_until(), Some(Instant::now() + five));
    assert_eq!(
        h.record(Evidence::Success, None, Some(permit.epoch())),
        None,
        "the superseded trial's success"
    );
    assert_eq!(h.cooling_until(), Some(Instant::now() + five), "the provider's pause holds");
    assert_eq!(h.record(Evidence::Failure, Some(MS), None), None, "a shorter hint does not shorten it");
    drop(permit);
}

#[tokio::test(start_paused = true)]
async fn turning_eligible_again_ends_the_open_time_but_not_a_reference_cooldown() {
    let h = breaker();
    h.saw_eligibility(true);
    h.record(Evidence::Failure, Some(MIN), None);
    h.saw_eligibility(true);
    assert!(matches!(h.admit(), Err(Skip::Open { .. })), "no change of answer: nothing happens");
    h.saw_eligibility(false);
    assert!(matches!(h.admit(), Err(Skip::Open { .. })));
    h.saw_eligibility(true);
    let permit = trial(&h);
    assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
    let reference = health(1);
    reference.record(Evidence::Failure, None, None);
    reference.saw_eligibility(false);
    reference.saw_eligibility(true);
    assert!(is_cooling(&reference), "the reference rule is exactly 0.1's");
}

// ----- what survives a restart, under each rule -----

fn kept() -> Kept {
    Kept { open_for: Some(Duration::from_secs(5)), failed_trials: 2, failures: 1, probation: 1 }
}

#[tokio::test(start_paused = true)]
async fn a_snapshot_taken_over_is_given_back_unchanged_under_either_rule() {
    for h in [breaker(), health(3)] {
        h.import(&kept());
        assert_eq!(h.export(), kept(), "{h:?}");
        assert_eq!(h.cooling_until(), Some(Instant::now() + Duration::from_secs(5)), "{h:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_disabled_health_takes_nothing_over() {
    let h = Health::new(Cooldown::disabled());
    h.import(&kept());
    assert_eq!(h.export(), Kept::default());
    assert!(matches!(h.admit(), Ok(Admit::Closed)));
}

#[tokio::test(start_paused = true)]
async fn a_breaker_ends_when_the_providers_probe_passes_after_it_opened() {
    let h = tripped();
    assert!(is_cooling(&h));
    let opened = Instant::now();
    // A probe that passed before it opened is older news: the open time holds.
    h.saw_good(|| Some(opened - MS));
    assert!(is_cooling(&h));
    // One that passed since ends it now: the next request is its trial.
    tokio::time::advance(10 * MS).await;
    h.saw_good(|| Some(Instant::now()));
    assert!(!is_cooling(&h));
    let permit = trial(&h);
    assert_eq!(h.record(Evidence::Success, None, Some(permit.epoch())), Some(BreakerState::Closed));
}

#[tokio::test(start_paused = true)]
async fn a_good_answer_ends_an_open_time_but_not_a_pause_the_provider_asked_for() {
    let h = tripped();
    assert!(is_cooling(&h));
    // A late attempt answers well: the next request is its trial.
    assert_eq!(h.record(Evidence::Success, None, None), None);
    assert!(!is_cooling(&h));
    // A Retry-After is a pause: neither a good answer nor a good probe ends it.
    let h = breaker();
    let hint = Duration::from_secs(5);
    h.record(Evidence::Failure, Some(hint), None);
    h.record(Evidence::Success, None, None);
    tokio::time::advance(MS).await;
    h.saw_good(|| Some(Instant::now()));
    assert_eq!(h.cooling_until(), Some(Instant::now() + hint - MS));
}
