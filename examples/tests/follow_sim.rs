//! The chain follower over the simulator: 10 000 blocks made while three providers fail in the
//! soak's ways (its measure's mix: refused, 5xx, rate-limited, JSON-RPC errors, malformed,
//! truncated and reset bodies, hanging, lagging, stalled, on another chain; and slow), at most
//! two at a time: every block once, in order, each on the chain, its parent link verified.
//! Run unpaired, and paired with a monitor (whose agreed head a block waits for). Prints the
//! requests per block and the delay from a block's making to its yield.
#![allow(clippy::print_stdout, reason = "the figures of the run, for the closing note")]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failnext::alloy::{ChainEvent, FailoverTransport, Start};
use failnext::{Endpoint, Jitter};
use failnext_blocklag::Monitor;
use failnext_examples::SIM_CHAIN_ID;
use failnext_examples::sim::{Behaviour, Chain};

const BLOCKS: u64 = 10_000;

/// One fault of the soak's mix (its measure's faults, each as often), or a slow answer.
fn fault(rng: &mut Jitter) -> Behaviour {
    match rng.below(65) {
        0..6 => Behaviour::Down,
        6..16 => Behaviour::Status([502, 503, 504][rng.below(3) as usize]),
        16..22 => Behaviour::RateLimited { retry_after_secs: 1 },
        22..31 => {
            let (code, message) =
                [(-32005, "limit exceeded"), (-32603, "internal error")][rng.below(2) as usize];
            Behaviour::JsonRpcError { code, message: message.to_owned() }
        }
        31..36 => Behaviour::Malformed,
        36..41 => Behaviour::Truncated,
        41..46 => Behaviour::ResetMidBody,
        46..51 => Behaviour::Hang,
        51..57 => Behaviour::Lagging(3 + rng.below(4)),
        57..60 => Behaviour::Stalled,
        60..64 => Behaviour::WrongChain(1 + rng.below(10)),
        _ => Behaviour::Slow(Duration::from_millis(30)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_blocks_through_flapping_providers_are_each_yielded_once_in_order_on_the_chain() {
    follow_through_faults(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_blocks_through_flapping_providers_paired_with_a_monitor_are_each_yielded_once_in_order()
{
    follow_through_faults(true).await;
}

/// The run: the follower unpaired, or paired with a monitor probing every 100 ms.
async fn follow_through_faults(paired: bool) {
    // The chain moves only when the test makes blocks.
    let chain = Chain::start(SIM_CHAIN_ID, Duration::from_secs(3600));
    let start = chain.head() + 1;
    let providers = [
        chain.provider("a").await.unwrap(),
        chain.provider("b").await.unwrap(),
        chain.provider("c").await.unwrap(),
    ];
    let endpoints: Vec<Endpoint> = providers.iter().map(|p| p.endpoint()).collect();
    let mut builder =
        FailoverTransport::builder(endpoints.clone()).attempt_timeout(Duration::from_millis(500));
    if paired {
        let monitor = Monitor::builder(endpoints).build().unwrap().spawn(Duration::from_millis(100));
        monitor.ready(Duration::from_secs(5)).await;
        builder = builder.monitor(monitor);
    }
    let transport = builder.build().unwrap();
    let made: Arc<Mutex<Vec<Instant>>> = Arc::default();

    let mut follower = transport.follow(Start::Number(start)).poll_every(Duration::from_millis(5));
    let follow = tokio::spawn({
        let made = made.clone();
        async move {
            let mut yielded = Vec::new();
            let mut delays = Vec::new();
            while (yielded.len() as u64) < BLOCKS {
                let event = tokio::time::timeout(Duration::from_secs(30), follower.next()).await;
                match event.expect("an event within 30 s").expect("no error") {
                    ChainEvent::Block { block, .. } => {
                        let i = (block.number - start) as usize;
                        if let Some(at) = made.lock().unwrap().get(i) {
                            delays.push(at.elapsed());
                        }
                        yielded.push(block);
                    }
                    other => panic!("only blocks on this chain: {other:?}"),
                }
            }
            (yielded, delays, follower.stats())
        }
    });

    // Blocks in bursts of 1 to 6, every 2 ms; every 25 ms one provider changes behaviour,
    // while at least one stays healthy.
    // The fault schedule: seeded, the same each run.
    let mut rng = Jitter::from_seed(0x5eed_0022);
    let mut behaviours = [Behaviour::Healthy, Behaviour::Healthy, Behaviour::Healthy];
    let mut next_fault = Instant::now();
    let mut faults = 0;
    while chain.head() < start + BLOCKS - 1 {
        if Instant::now() >= next_fault {
            let p = rng.below(3) as usize;
            let candidate = fault(&mut rng);
            let healthy_left =
                behaviours.iter().enumerate().filter(|(i, b)| *i != p && **b == Behaviour::Healthy).count();
            let behaviour = if healthy_left == 0 { Behaviour::Healthy } else { candidate };
            faults += usize::from(behaviour != Behaviour::Healthy);
            providers[p].set(behaviour.clone()).await.unwrap();
            behaviours[p] = behaviour;
            next_fault = Instant::now() + Duration::from_millis(25);
        }
        let burst = (1 + rng.below(6)).min(start + BLOCKS - 1 - chain.head());
        chain.advance(burst);
        let now = Instant::now();
        made.lock().unwrap().extend(std::iter::repeat_n(now, burst as usize));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for p in &providers {
        p.set(Behaviour::Healthy).await.unwrap();
    }
    let (yielded, mut delays, stats) = follow.await.unwrap();

    let numbers: Vec<u64> = yielded.iter().map(|b| b.number).collect();
    assert_eq!(numbers, (start..start + BLOCKS).collect::<Vec<_>>(), "0 gaps, 0 duplicates, in order");
    for pair in yielded.windows(2) {
        assert_eq!(pair[1].parent_hash, pair[0].hash, "block {} links to the one before", pair[1].number);
    }
    for block in &yielded {
        assert_eq!(
            block.hash.to_string(),
            providers[0].block_hash(block.number),
            "block {} is on the chain",
            block.number
        );
    }
    delays.sort_unstable();
    let q = |f: f64| delays[((delays.len() - 1) as f64 * f) as usize];
    let received: u64 = providers.iter().map(|p| p.total()).sum();
    println!(
        "follower{}: {BLOCKS} blocks through {faults} faults, {} requests sent ({:.3} per block), {received} received by the providers ({:.3} per block), {} retried, {} blocks off the chain refused; delay from making to yield p50 {:?}, p99 {:?}",
        if paired { " (paired)" } else { "" },
        stats.requests,
        stats.requests as f64 / BLOCKS as f64,
        received as f64 / BLOCKS as f64,
        stats.retried,
        stats.off_chain,
        q(0.5),
        q(0.99),
    );
}
