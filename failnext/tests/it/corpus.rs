//! Real providers' answers, judged (feature `jsonrpc`): every answer in
//! `tests/corpus/real_answers.json` is quoted verbatim from a public source (an issue thread,
//! a provider's docs, a client library), with that source beside it. Each is served as its
//! provider sent it (status, content type, body) to a read through the middleware with the
//! JSON-RPC classifier, and the judgement is checked against what the answer means:
//!
//! - `answer`, `definitive`: returned (a revert, invalid params: every provider answers the same);
//! - `capacity`: fails over as [`Class::Capacity`];
//! - `credentials`: fails over as [`Class::Unauthorized`]; `payment` as [`Class::Payment`];
//! - `limit`: fails over as [`Class::Limit`] without counting against the provider;
//! - `stale`, `unsupported`: fail over as [`Class::Stale`];
//! - `unavailable`, `broken`: fail over as [`Class::Broken`] or [`Class::Trigger`] (502-504).
//!
//! An entry whose handling its collector found ambiguous (its note says "AMBIGUOUS") must fail
//! over or be returned as the meaning says; its class may be any of those that fail over.
//! When users report a new shape, add it here with its source.

use std::time::Duration;

use failnext::jsonrpc::JsonRpcClassifier;
use failnext::{Class, Evidence, Verdict};
use wiremock::matchers::path;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::events::{Ev, Recorder};
use crate::support::*;

const READ: &str = r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#;

struct Entry {
    provider: String,
    source: String,
    status: u16,
    content_type: String,
    body: String,
    expect: String,
    note: Option<String>,
}

impl Entry {
    fn ambiguous(&self) -> bool {
        self.note.as_deref().is_some_and(|n| n.contains("AMBIGUOUS"))
    }

    /// Whether the judgement `class` with `verdict` and `evidence` is right for this answer.
    fn judged_right(&self, class: Class, verdict: Verdict, evidence: Evidence) -> bool {
        let returned = verdict == Verdict::Return;
        let wanted: &[Class] = match self.expect.as_str() {
            "answer" => &[Class::Answer],
            "definitive" => &[Class::Definitive],
            "capacity" => &[Class::Capacity],
            "credentials" => &[Class::Unauthorized],
            "payment" => &[Class::Payment],
            "limit" => &[Class::Limit],
            "stale" | "unsupported" => &[Class::Stale],
            "unavailable" | "broken" => &[Class::Broken, Class::Trigger],
            other => panic!("unknown expectation {other:?} for {}", self.source),
        };
        let should_return = matches!(self.expect.as_str(), "answer" | "definitive");
        if returned != should_return {
            return false;
        }
        if self.expect == "limit" && evidence == Evidence::Failure {
            return false;
        }
        self.ambiguous() || wanted.contains(&class)
    }
}

fn corpus() -> Vec<Entry> {
    let text = include_str!("../corpus/real_answers.json");
    let entries: Vec<serde_json::Value> = serde_json::from_str(text).expect("the corpus is valid JSON");
    let field = |e: &serde_json::Value, k: &str| e[k].as_str().unwrap_or_default().to_owned();
    entries
        .iter()
        .map(|e| Entry {
            provider: field(e, "provider"),
            source: field(e, "source"),
            status: e["status"].as_u64().and_then(|s| u16::try_from(s).ok()).expect("a status"),
            content_type: field(e, "content_type"),
            body: field(e, "body"),
            expect: field(e, "expect"),
            note: e["note"].as_str().map(str::to_owned),
        })
        .collect()
}

#[test]
fn the_corpus_holds_at_least_sixty_real_answers_each_with_its_source() {
    let corpus = corpus();
    assert!(corpus.len() >= 60, "{} answers", corpus.len());
    for entry in &corpus {
        assert!(entry.source.starts_with("https://"), "{}: {}", entry.provider, entry.source);
        assert!(!entry.provider.is_empty());
    }
}

#[tokio::test]
async fn every_real_answer_in_the_corpus_is_judged_as_what_it_means() {
    let corpus = corpus();
    let server = MockServer::start().await;
    for (i, entry) in corpus.iter().enumerate() {
        let template = ResponseTemplate::new(entry.status)
            .set_body_raw(entry.body.clone().into_bytes(), &entry.content_type);
        Mock::given(path(format!("/e{i}"))).respond_with(template).mount(&server).await;
    }
    let ok = ResponseTemplate::new(200)
        .set_body_raw(r#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#, "application/json");
    Mock::given(path("/ok")).respond_with(ok).mount(&server).await;

    let mut wrong = Vec::new();
    for (i, entry) in corpus.iter().enumerate() {
        let log = Recorder::with_judged();
        let failover =
            builder([("p", format!("{}/e{i}", server.uri())), ("backup", format!("{}/ok", server.uri()))])
                .classifier(JsonRpcClassifier::new())
                .on_event(log.hook())
                .build()
                .unwrap();
        let sent = client(failover).post(format!("{}/rpc", server.uri())).body(READ).send();
        let _ = tokio::time::timeout(Duration::from_secs(10), sent).await.expect("the read finished in time");
        let judged = log.take().into_iter().find_map(|ev| match ev {
            Ev::Judged(endpoint, _, class, verdict, evidence) if endpoint == "p" => {
                Some((class, verdict, evidence))
            }
            _ => None,
        });
        let Some((class, verdict, evidence)) = judged else {
            wrong.push(format!("#{i} {} ({}): not judged", entry.provider, entry.source));
            continue;
        };
        if !entry.judged_right(class, verdict, evidence) {
            wrong.push(format!(
                "#{i} {} {} {:?} -> {class:?} {verdict:?} {evidence:?}, expected {} ({})",
                entry.provider,
                entry.status,
                entry.body.chars().take(120).collect::<String>(),
                entry.expect,
                entry.source
            ));
        }
    }
    assert!(wrong.is_empty(), "{} of {} judged wrong:\n{}", wrong.len(), corpus.len(), wrong.join("\n"));
}
