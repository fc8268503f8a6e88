//! The demo bot, run briefly on a compressed timeline: every invariant holds and every
//! provider takes its turn. Only the test about the picture writes one (to a temporary
//! folder): the others leave `target/demo/run.svg` to the last demo run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use failnext_examples::demo::{self, Config, PROVIDER_IDS};

/// Runs the demo with `config` (bounded), returning its summary, its output, and both as one
/// report for assertion messages.
async fn run(config: Config) -> (demo::Summary, String, String) {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = lines.clone();
    let summary = tokio::time::timeout(
        Duration::from_secs(30),
        demo::run(config, move |line| log.lock().unwrap().push(line.to_owned()), std::future::pending()),
    )
    .await
    .expect("the demo ends by itself")
    .expect("the demo starts");
    let output = lines.lock().unwrap().join("\n");
    let report = format!("{output}\n\n{summary}");
    (summary, output, report)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_run_keeps_every_invariant_and_uses_every_provider() {
    let config = Config { picture: None, ..Config::simulated(Duration::from_secs(3)) };
    let (summary, output, report) = run(config).await;

    assert!(summary.simulated, "{report}");
    assert_eq!(summary.reads_failed_with_healthy_eligible, Some(0), "{report}");
    assert_eq!(summary.writes_to_several, 0, "{report}");
    assert!(summary.invariants_hold(), "{report}");
    assert!(summary.violations.is_empty(), "{report}");
    assert!(summary.writes > 0, "{report}");
    assert!(summary.failovers > 0, "failnext moved some reads on: {report}");

    let ids: Vec<&str> = summary.providers.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, PROVIDER_IDS, "{report}");
    for provider in &summary.providers {
        assert!(provider.reads_served > 0, "{} served no read: {report}", provider.id);
    }

    // The live view and the timeline were shown.
    for expected in ["primary goes down", "backup rate-limits", "eligible", "cooling"] {
        assert!(output.contains(expected), "no {expected:?} in the output: {report}");
    }
}

#[tokio::test]
async fn an_early_shutdown_still_summarises() {
    let config = Config { picture: None, ..Config::simulated(Duration::from_secs(60)) };
    let summary = demo::run(config, |_| {}, tokio::time::sleep(Duration::from_millis(500)))
        .await
        .expect("the demo starts");
    assert!(summary.elapsed < Duration::from_secs(10), "stopped early: {summary}");
    assert!(summary.invariants_hold(), "{summary}");
}

#[tokio::test]
async fn real_provider_urls_are_checked_before_anything_runs() {
    // Without the `tls` feature (as CI builds it), an https URL is refused up front.
    if !cfg!(feature = "tls") {
        let https = Config::real(vec!["https://eth.example/".to_owned()], Duration::from_secs(1));
        let err = demo::run(https, |_| {}, std::future::pending()).await.unwrap_err();
        assert!(err.to_string().contains("TLS"), "{err}");
    }

    let none = Config::real(Vec::new(), Duration::from_secs(1));
    assert!(none.is_simulated(), "no URL means the simulator");

    let four = Config::real(vec!["http://127.0.0.1:1/".to_owned(); 4], Duration::from_secs(1));
    let err = demo::run(four, |_| {}, std::future::pending()).await.unwrap_err();
    assert!(err.to_string().contains("one to 3"), "{err}");
}

#[tokio::test]
async fn with_provider_urls_the_same_bot_runs_without_fault_injection() {
    // The real-provider path, pointed at simulated providers the bot knows nothing about.
    // Real providers go through the environment's proxy, if one is set: nothing to test then.
    if ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"].iter().any(|v| std::env::var_os(v).is_some()) {
        return;
    }
    let chain = failnext_examples::sim::Chain::start(31337, Duration::from_millis(100));
    let primary = chain.provider("a").await.unwrap();
    let backup = chain.provider("b").await.unwrap();
    let urls = vec![primary.url().to_owned(), backup.url().to_owned()];
    let config = Config { picture: None, ..Config::real(urls, Duration::from_secs(2)) };
    let summary = demo::run(config, |_| {}, std::future::pending()).await.expect("the demo starts");

    assert!(!summary.simulated, "{summary}");
    assert_eq!(summary.reads_failed_with_healthy_eligible, None, "not checked without the simulator");
    assert_eq!(summary.reads_failed, 0, "{summary}");
    assert_eq!(summary.writes_to_several, 0, "{summary}");
    let ids: Vec<&str> = summary.providers.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["primary", "backup"]);
    assert_eq!(
        summary.providers[0].reads_served,
        summary.reads_by_method.iter().map(|(_, n)| n).sum::<u64>()
    );
    assert!(summary.providers.iter().all(|p| p.received.is_none()), "{summary}");
    assert_eq!(backup.count("eth_sendRawTransaction"), 0, "nothing failed, so nothing moved on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_run_shows_the_new_faults_and_writes_its_picture() {
    let dir = std::env::temp_dir().join(format!("failnext-demo-picture-{}", std::process::id()));
    let path = dir.join("run.svg");
    let _ = std::fs::remove_file(&path);
    let mut config = Config::simulated(Duration::from_secs(3));
    config.picture = Some(path.clone());
    let (summary, output, report) = run(config).await;
    assert!(summary.invariants_hold(), "{report}");

    // The timeline's new steps, and the live view's breaker and reasons.
    for expected in
        ["primary slows down", "third stalls", "blocks ahead (an outlier)", "(breaker ", "behind, max 3"]
    {
        assert!(output.contains(expected), "no {expected:?} in the output: {report}");
    }

    // The picture: written where asked, named in the summary, one lane per provider.
    assert_eq!(summary.picture.as_deref(), Some(path.as_path()), "{report}");
    assert!(summary.to_string().contains(&format!("picture: {}", path.display())), "{summary}");
    let svg = std::fs::read_to_string(&path).expect("the picture is written");
    assert!(svg.starts_with("<svg "), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
    assert_eq!(svg.matches("<g class=\"lane\"").count(), PROVIDER_IDS.len(), "{svg}");
    for id in PROVIDER_IDS {
        assert!(svg.contains(&format!("data-provider=\"{id}\"")), "no lane for {id}: {svg}");
    }
    assert!(svg.contains("third stalls"), "the timeline's steps are listed: {svg}");
    let _ = std::fs::remove_dir_all(&dir);
}
