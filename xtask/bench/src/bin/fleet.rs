//! `failnext-fleet`: a fleet of real OS processes over one rate-limited provider (issue 32).
//!
//! ```text
//! cargo run --release -p failnext-bench --bin failnext-fleet [-- --seconds N]
//! ```
//!
//! A loopback primary that serves 200 requests a second (fixed one-second windows) and answers
//! `429` with `Retry-After: 1` beyond them, two unlimited backups, and a real `redis-server`
//! (`FAILNEXT_REDIS_SERVER`, else `redis-server` on the PATH). For 8 processes at 100 reads a
//! second and 16 at 50, each process this same binary (`--client`), reading `eth_blockNumber`
//! through the failnext middleware (429 a trigger, default breaker), once without a fleet and
//! once with one (`Fleet::budget("primary", 196/s, burst 4)`: at most 200 in any second).
//! Measured at the servers and in each process: the share of the primary's requests that met a
//! 429, the share of its quota it served, each process's share of the primary against a fair
//! one, requests per read, reads answered wrong or not at all.

use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use failnext::fleet::{Fleet, Rate};
use failnext::{Endpoint, Failover, RequestBuilderExt, ResponseExt};
use failnext_loopback::{Action, Received, RedisServer, Reply, Server};
use reqwest_middleware::ClientBuilder;
use serde_json::{Value, json};

const LIMIT: u64 = 200;
const READ: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#;

#[allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line tool")]
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result =
        if args.first().is_some_and(|a| a == "--client") { client(&args[1..]) } else { scenario(&args) };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("failnext-fleet: {e}");
            ExitCode::FAILURE
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One process of the fleet: `--client PRIMARY BACKUP_A BACKUP_B REDIS|- FLEET RATE SECONDS`; prints
/// one JSON line.
#[allow(clippy::print_stdout, reason = "the process's figures go to its parent on stdout")]
fn client(args: &[String]) -> Result<(), BoxError> {
    let [primary, a, b, redis, name, rate, seconds] = args else {
        return Err("--client needs 7 arguments".into());
    };
    let (rate, seconds): (u64, u64) = (rate.parse()?, seconds.parse()?);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let figures = rt.block_on(async move {
        let told = Arc::new(std::sync::Mutex::new(Vec::<(String, u64)>::new()));
        let seen = Arc::clone(&told);
        let endpoints = [
            Endpoint::new("primary", primary.as_str()),
            Endpoint::new("backup-a", a.as_str()),
            Endpoint::new("backup-b", b.as_str()),
        ];
        let paired = name.starts_with("paired");
        let mut builder = Failover::builder(endpoints.clone())
            .additional_trigger_status_codes([http::StatusCode::TOO_MANY_REQUESTS])
            .on_event(move |event| {
                if let failnext::Event::Fleet { state } = event {
                    let mut told = seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    told.push((format!("{state:?}"), unix_ms()));
                }
            });
        if redis != "-" && !paired {
            let fleet = Fleet::connect(redis, name)?.budget("primary", Rate::per_second(196).burst(4));
            builder = builder.fleet(fleet);
        }
        // The README's paired setup: a monitor probing every 2 s (expecting chain 1), the
        // JSON-RPC classifier; with a fleet, one prober per provider for all the processes.
        let mut probing = None;
        // When this process's monitor first held the primary out (Unix microseconds; 0: never),
        // watched every millisecond.
        let knew = Arc::new(AtomicU64::new(0));
        let end = Instant::now() + Duration::from_secs(seconds);
        if paired {
            let mut monitor = failnext_blocklag::Monitor::builder(endpoints).expected_chain_id(1);
            if redis != "-" {
                monitor = monitor.fleet(Fleet::connect(redis, name)?);
                builder = builder.fleet(Fleet::connect(redis, name)?);
            }
            let monitor = monitor.build()?;
            probing = Some(monitor.spawn(Duration::from_secs(2)));
            let (watched, knew) = (monitor.clone(), Arc::clone(&knew));
            tokio::spawn(async move {
                let mut admitted = false;
                while Instant::now() < end {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let eligible = watched.eligible("primary");
                    admitted |= eligible;
                    if admitted && !eligible {
                        knew.store(unix_us(), Ordering::Relaxed);
                        return;
                    }
                }
            });
            builder = builder.monitor(monitor).classifier(failnext::jsonrpc::JsonRpcClassifier::default());
        }
        let http = reqwest::Client::builder().no_proxy().build()?;
        let client = ClientBuilder::new(http).with(builder.build()?).build();
        let (mut reads, mut right, mut on_primary, mut slowest) = (0u64, 0u64, 0u64, Duration::ZERO);
        let mut wrong_at = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while Instant::now() < end {
            tick.tick().await;
            reads += 1;
            let (started, started_us) = (Instant::now(), unix_us());
            let sent = client.post(primary.as_str()).header("content-type", "application/json").body(READ);
            if let Ok(response) = sent.allow_failover().send().await {
                let by = response.served_by().map(|e| e.as_str().to_owned());
                let text = if response.status() == 200 { response.text().await.ok() } else { None };
                let answer = text.and_then(|t| serde_json::from_str::<Value>(&t).ok());
                let result = answer.as_ref().and_then(|a| a["result"].as_str());
                if result == Some("0x10") {
                    right += 1;
                    on_primary += u64::from(by.as_deref() == Some("primary"));
                } else if result == Some("0x99") {
                    wrong_at.push(started_us);
                }
            }
            slowest = slowest.max(started.elapsed());
        }
        drop(probing);
        let told = told.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok::<_, BoxError>(json!({
            "wrong": wrong_at.len(),
            "wrong_at_us": wrong_at,
            "knew_us": knew.load(Ordering::Relaxed),
            "reads": reads,
            "right": right,
            "primary": on_primary,
            "slowest_us": slowest.as_micros() as u64,
            "told": told,
        }))
    })?;
    println!("{figures}");
    Ok(())
}

/// Microseconds since the Unix epoch (the processes' common clock).
fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Milliseconds since the Unix epoch (the processes' common clock).
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The README's paired setup (a monitor probing every 2 s, expecting chain 1) in 8 processes at
/// 100 reads a second over three unlimited providers, the first moving onto another chain a
/// third into the run; without a fleet, and with one (the failovers and the monitors on it:
/// one prober per provider, its news announced). The table's rows.
#[allow(clippy::print_stderr, reason = "progress goes to stderr")]
fn moved_onto_another_chain(
    rt: &tokio::runtime::Runtime,
    redis: &RedisServer,
    seconds: u64,
) -> Result<String, BoxError> {
    let mut md = String::from(
        "\n| 8 x 100 reads/s, paired (spawn 2 s), the first provider moves onto another chain | reads | wrong (the moved provider's) | of them started before any process knew | started after the first knew | after their own process knew | every process knew within (ms of the first) | failed | probes of the first provider per second, fleet-wide (before the move) |\n| --- | --: | --: | --: | --: | --: | --: | --: | --: |\n",
    );
    for with_fleet in [false, true] {
        let moved = Arc::new(AtomicBool::new(false));
        let (reads, probes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (p, a, b) = rt.block_on(async {
            (
                chain(Arc::clone(&reads), Arc::clone(&probes), Arc::clone(&moved)).await,
                backup(Arc::default()).await,
                backup(Arc::default()).await,
            )
        });
        let redis_url = if with_fleet { redis.url() } else { "-".to_owned() };
        let name = format!("paired-{with_fleet}");
        eprintln!(
            "failnext-fleet: 8 paired processes, fleet {with_fleet}, the first provider moving, {seconds} s"
        );
        let exe = std::env::current_exe()?;
        let children: Vec<_> = (0..8)
            .map(|_| {
                Command::new(&exe)
                    .args(["--client", &p.url("/"), &a.url("/"), &b.url("/"), &redis_url, &name, "100"])
                    .arg(seconds.to_string())
                    .stdout(Stdio::piped())
                    .spawn()
            })
            .collect::<Result<_, _>>()?;
        let before = Duration::from_secs(seconds) / 3;
        std::thread::sleep(before);
        let probed = probes.load(Ordering::Relaxed);
        moved.store(true, Ordering::Relaxed);
        let mut figures = Vec::new();
        for child in children {
            let out = child.wait_with_output()?;
            figures.push(serde_json::from_slice::<Value>(&out.stdout).unwrap_or_default());
        }
        let sum = |k: &str| figures.iter().map(|f| f[k].as_u64().unwrap_or(0)).sum::<u64>();
        let (all, right, wrong) = (sum("reads"), sum("right"), sum("wrong"));
        // When each process knew (its monitor held the moved provider out), and when each
        // wrong read started: a read started after the first process knew was one the fleet
        // could have spared.
        let knew: Vec<u64> =
            figures.iter().map(|f| f["knew_us"].as_u64().unwrap_or(0)).filter(|k| *k > 0).collect();
        let (first, last) =
            (knew.iter().min().copied().unwrap_or(u64::MAX), knew.iter().max().copied().unwrap_or(0));
        let wrong_at = |f: &Value| -> Vec<u64> {
            f["wrong_at_us"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default()
        };
        let before_any = figures.iter().flat_map(wrong_at).filter(|at| *at < first).count();
        let after_own = figures
            .iter()
            .map(|f| {
                let own = f["knew_us"].as_u64().filter(|k| *k > 0).unwrap_or(u64::MAX);
                wrong_at(f).into_iter().filter(|at| *at >= own).count()
            })
            .sum::<usize>();
        let all_knew = if knew.len() == figures.len() && last >= first {
            format!("{:.1}", (last - first) as f64 / 1000.0)
        } else {
            format!("{} of {} knew", knew.len(), figures.len())
        };
        md.push_str(&format!(
            "| {} | {all} | {wrong} | {before_any} | {} | {after_own} | {all_knew} | {} | {:.2} |\n",
            if with_fleet { "with the fleet" } else { "without" },
            wrong as usize - before_any,
            all - right - wrong,
            probed as f64 / before.as_secs_f64(),
        ));
    }
    Ok(md)
}

/// The primary: [`LIMIT`] requests per one-second window, 429 beyond; counts both.
async fn primary(served: Arc<AtomicU64>, limited: Arc<AtomicU64>) -> Server {
    let window = Arc::new(std::sync::Mutex::new((Instant::now(), 0u64)));
    Server::start(Arc::new(move |_: &Received| {
        let mut w = window.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if w.0.elapsed() >= Duration::from_secs(1) {
            *w = (Instant::now(), 0);
        }
        w.1 += 1;
        if w.1 > LIMIT {
            limited.fetch_add(1, Ordering::Relaxed);
            return Action::Reply(Reply::new(429).header("retry-after", "1").text("Too Many Requests"));
        }
        served.fetch_add(1, Ordering::Relaxed);
        Action::Reply(Reply::new(200).json(ANSWER))
    }))
    .await
}

async fn backup(count: Arc<AtomicU64>) -> Server {
    chain(count, Arc::default(), Arc::default()).await
}

/// A provider at block 0x10 of chain 1 (answering reads, and a monitor's probes: batches of
/// `eth_getBlockByNumber` and `eth_chainId`), or, once `moved` is set, at block 0x99 of chain
/// 10; counts reads in `reads` and probes in `probes`.
async fn chain(reads: Arc<AtomicU64>, probes: Arc<AtomicU64>, moved: Arc<AtomicBool>) -> Server {
    Server::start(Arc::new(move |req: &Received| {
        let call = req.json();
        if call["method"] == "eth_blockNumber" {
            reads.fetch_add(1, Ordering::Relaxed);
        } else {
            probes.fetch_add(1, Ordering::Relaxed);
        }
        let (number, chain) = if moved.load(Ordering::Relaxed) { (0x99, 10) } else { (0x10, 1) };
        let answer = |call: &Value| {
            let result = match call["method"].as_str() {
                Some("eth_chainId") => json!(format!("{chain:#x}")),
                Some("eth_getBlockByNumber") => json!({
                    "number": format!("{number:#x}"),
                    "hash": format!("0x{number:064x}"),
                    "timestamp": format!("{:#x}", unix_ms() / 1000),
                }),
                _ => json!(format!("{number:#x}")),
            };
            json!({"jsonrpc": "2.0", "id": call["id"], "result": result})
        };
        let body = match &call {
            Value::Array(calls) => Value::Array(calls.iter().map(answer).collect()),
            one => answer(one),
        };
        Action::Reply(Reply::new(200).json(body.to_string()))
    }))
    .await
}

#[allow(clippy::print_stdout, clippy::print_stderr, reason = "the report goes to stdout, progress to stderr")]
fn scenario(args: &[String]) -> Result<(), BoxError> {
    let seconds: u64 = match args {
        [flag, n] if flag == "--seconds" => n.parse()?,
        [] => 20,
        _ => return Err("usage: failnext-fleet [--seconds N]".into()),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let mut redis = RedisServer::start()?;
    let mut md = String::from(
        "| processes x reads/s | fleet | reads | wrong or failed | primary's requests meeting a 429 | primary's quota served | per-process share of the primary (min-max of fair) | requests per read | slowest read |\n| --- | --- | --: | --: | --: | --: | --: | --: | --: |\n",
    );
    let mut rows: Vec<(u64, u64, Option<&str>)> = Vec::new();
    for (processes, rate) in [(8u64, 100u64), (16, 50)] {
        rows.push((processes, rate, None));
        rows.push((processes, rate, Some("yes")));
    }
    rows.push((8, 100, Some("yes, Redis killed for 3 s mid-run")));
    let mut notes = Vec::new();
    for (run, (processes, rate, fleet)) in rows.into_iter().enumerate() {
        let (served, limited, backups) = (Arc::default(), Arc::default(), Arc::new(AtomicU64::new(0)));
        let (p, a, b) = rt.block_on(async {
            (
                primary(Arc::clone(&served), Arc::clone(&limited)).await,
                backup(Arc::clone(&backups)).await,
                backup(Arc::clone(&backups)).await,
            )
        });
        let redis_url = if fleet.is_some() { redis.url() } else { "-".to_owned() };
        // A fleet of its own per run: a fresh budget.
        let name = format!("bench-{processes}x{rate}-{run}");
        eprintln!("failnext-fleet: {processes} processes at {rate}/s, fleet {fleet:?}, {seconds} s");
        let exe = std::env::current_exe()?;
        let children: Vec<_> = (0..processes)
            .map(|_| {
                Command::new(&exe)
                    .args(["--client", &p.url("/"), &a.url("/"), &b.url("/"), &redis_url, &name])
                    .args([rate.to_string(), seconds.to_string()])
                    .stdout(Stdio::piped())
                    .spawn()
            })
            .collect::<Result<_, _>>()?;
        let mut back_at = None;
        if fleet.is_some_and(|f| f.contains("killed")) {
            let port = redis.port();
            std::thread::sleep(Duration::from_secs(seconds / 3));
            redis.stop();
            std::thread::sleep(Duration::from_secs(3));
            redis = RedisServer::start_on(port)?;
            back_at = Some(unix_ms());
        }
        let mut figures = Vec::new();
        for child in children {
            let out = child.wait_with_output()?;
            figures.push(serde_json::from_slice::<Value>(&out.stdout).unwrap_or_default());
        }
        let sum = |k: &str| figures.iter().map(|f| f[k].as_u64().unwrap_or(0)).sum::<u64>();
        let (reads, right) = (sum("reads"), sum("right"));
        let (served, limited) = (served.load(Ordering::Relaxed), limited.load(Ordering::Relaxed));
        let requests = served + limited + backups.load(Ordering::Relaxed);
        let fair = served as f64 / processes as f64;
        let shares: Vec<f64> =
            figures.iter().map(|f| f["primary"].as_u64().unwrap_or(0) as f64 / fair.max(1.0)).collect();
        let (lo, hi) = shares.iter().fold((f64::MAX, 0f64), |(lo, hi), s| (lo.min(*s), hi.max(*s)));
        let slowest = figures.iter().map(|f| f["slowest_us"].as_u64().unwrap_or(0)).max().unwrap_or(0);
        if let Some(back) = back_at {
            // Per process: when it told Redis back, after Redis was.
            let rejoined: Vec<Option<u64>> = figures
                .iter()
                .map(|f| {
                    f["told"].as_array().and_then(|told| {
                        told.iter()
                            .filter(|t| t[0] == "Rejoined")
                            .filter_map(|t| t[1].as_u64())
                            .find(|at| *at >= back)
                            .map(|at| at - back)
                    })
                })
                .collect();
            let told_down = figures
                .iter()
                .map(|f| {
                    f["told"].as_array().map_or(0, |t| t.iter().filter(|t| t[0] == "Unavailable").count())
                })
                .collect::<Vec<_>>();
            notes.push(format!(
                "Redis killed {} s into the run and started again 3 s later: each process told it unavailable {:?} times; back on the fleet's view (ms after Redis was) {:?}.",
                seconds / 3,
                told_down,
                rejoined
            ));
        }
        md.push_str(&format!(
            "| {processes} x {rate} | {} | {reads} | {} | {:.2} % | {:.1} % | {:.2}-{:.2} | {:.3} | {:.1} ms |\n",
            fleet.unwrap_or("no"),
            reads - right,
            100.0 * limited as f64 / (served + limited).max(1) as f64,
            100.0 * served as f64 / (LIMIT * seconds) as f64,
            lo,
            hi,
            requests as f64 / reads.max(1) as f64,
            slowest as f64 / 1000.0,
        ));
    }
    for note in notes {
        md.push_str(&format!("\n{note}\n"));
    }
    md.push_str(&moved_onto_another_chain(&rt, &redis, seconds)?);
    redis.stop();
    println!("{md}");
    Ok(())
}
