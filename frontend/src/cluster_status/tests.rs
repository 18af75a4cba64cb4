use super::*;
use watchlife_protocol::{Heartbeat, ReflectorUpdate};

const REFUSED: &str = "WATCH: ServiceError: client error (Connect): tcp connect error: Connection refused (os error 111)";

fn clock(ms: f64) -> String {
    format!("t{}", ms / 1000.0)
}

fn hello(source: serde_json::Value, resources: &[&str]) -> FrameBody {
    FrameBody::Hello(
        serde_json::from_value(serde_json::json!({
            "protocol": 1, "server_version": "x", "stream": "s", "source": source,
            "resources": resources, "observed_stages": [], "demo_actions": false,
            "heartbeat_ms": 5000,
        }))
        .unwrap(),
    )
}

fn cluster(resources: &[&str]) -> ClusterStatus {
    let mut status = ClusterStatus::default();
    let source = serde_json::json!({"kind": "cluster", "context": "c", "server": "https://x"});
    status.observe(&hello(source, resources), 0.0);
    status
}

fn reflector(resource: &str, state: ReflectorState) -> FrameBody {
    FrameBody::Reflector(ReflectorUpdate {
        resource: resource.into(),
        state,
    })
}

fn backoff(delay_ms: u64, error: &str) -> ReflectorState {
    ReflectorState::Backoff {
        delay_ms,
        error: error.into(),
    }
}

fn beat(watches_open: Option<u64>) -> FrameBody {
    FrameBody::Heartbeat(Heartbeat {
        at: 0,
        watches_open,
    })
}

fn headline(status: &ClusterStatus, now_ms: f64) -> String {
    status
        .line(now_ms, &clock)
        .map(|l| l.headline)
        .unwrap_or_default()
}

#[test]
fn an_unreachable_cluster_counts_down_to_its_next_try_then_is_back() {
    let mut status = cluster(&["pods"]);
    status.observe(
        &reflector(
            "pods",
            ReflectorState::ListFinished {
                count: 1,
                resource_version: "5".into(),
            },
        ),
        1_000.0,
    );
    assert_eq!(headline(&status, 1_000.0), "cluster reachable");
    status.observe(&reflector("pods", backoff(12_000, REFUSED)), 60_000.0);
    let line = status.line(60_000.0, &clock).unwrap();
    assert_eq!(line.tone, Tone::Trouble);
    assert_eq!(
        line.headline,
        "cluster unreachable since t60 · retrying in 12 s"
    );
    assert!(
        line.words
            .starts_with("the apiserver refused the connection"),
        "{line:?}"
    );
    assert!(line.raw.contains("os error 111"), "{line:?}");
    assert_eq!(
        headline(&status, 61_500.0),
        "cluster unreachable since t60 · retrying in 11 s"
    );
    assert_eq!(
        headline(&status, 73_000.0),
        "cluster unreachable since t60 · retrying now"
    );
    // A later try keeps the first failure's time.
    status.observe(&reflector("pods", backoff(3_000, REFUSED)), 74_000.0);
    assert_eq!(
        headline(&status, 74_000.0),
        "cluster unreachable since t60 · retrying in 3 s"
    );
    // A heartbeat with fewer watches open than resources proves nothing.
    status.observe(&beat(Some(0)), 75_000.0);
    status.observe(&beat(None), 75_000.0);
    assert!(headline(&status, 75_000.0).starts_with("cluster unreachable"));
    status.observe(&beat(Some(1)), 80_000.0);
    let line = status.line(80_000.0, &clock).unwrap();
    assert_eq!(
        (line.tone, line.headline.as_str()),
        (Tone::Back, "back since t80")
    );
}

#[test]
fn a_denial_is_said_in_words_with_the_raw_text_behind() {
    let mut status = cluster(&["pods", "secrets"]);
    let raw = r#"LIST: ApiError: pods is forbidden: User "nobody" cannot list resource "pods" in API group "" at the cluster scope (403)"#;
    status.observe(&reflector("pods", backoff(8_000, raw)), 0.0);
    let line = status.line(0.0, &clock).unwrap();
    assert_eq!(
        line.headline,
        "forbidden: watchlife may not list pods (RBAC) · retrying in 8 s"
    );
    assert!(line.raw.contains("User \"nobody\""), "{line:?}");
    // An unreachable cluster is the worse news, and said first.
    status.observe(&reflector("secrets", backoff(1_000, REFUSED)), 0.0);
    assert!(headline(&status, 0.0).starts_with("cluster unreachable since t0"));
    // Back only when every failing Reflector was answered.
    status.observe(
        &reflector(
            "secrets",
            ReflectorState::Bookmark {
                resource_version: "9".into(),
            },
        ),
        1.0,
    );
    assert!(headline(&status, 1.0).starts_with("forbidden"));
    status.observe(
        &reflector(
            "pods",
            ReflectorState::ListFinished {
                count: 0,
                resource_version: "9".into(),
            },
        ),
        2_000.0,
    );
    assert_eq!(headline(&status, 2_000.0), "back since t2");
}

#[test]
fn a_watch_that_ended_is_a_note_not_trouble() {
    let mut status = cluster(&["pods"]);
    let started = ReflectorState::WatchStarted {
        resource_version: "5".into(),
        timeout_seconds: 300,
    };
    status.observe(&reflector("pods", started), 0.0);
    let ended = ReflectorState::WatchEnded {
        resource_version: "5".into(),
        reason: "the watch ended (its timeout, or the server closed it)".into(),
    };
    status.observe(&reflector("pods", ended), 299_000.0);
    let line = status.line(299_000.0, &clock).unwrap();
    assert_eq!(line.tone, Tone::Ok);
    assert_eq!(
        line.words,
        "pods: the watch ended (server timeout); re-watching"
    );
    assert!(line.raw.contains("its timeout"));
    assert_eq!(
        status
            .line(299_000.0 + NOTE_SHOWN_MS, &clock)
            .unwrap()
            .words,
        ""
    );
}

#[test]
fn all_watches_open_is_an_answer() {
    let mut status = cluster(&["pods", "secrets"]);
    assert_eq!(
        headline(&status, 0.0),
        "cluster: waiting for its first answer"
    );
    status.observe(&beat(Some(1)), 0.0);
    assert_eq!(
        headline(&status, 0.0),
        "cluster: waiting for its first answer"
    );
    status.observe(&beat(Some(2)), 0.0);
    assert_eq!(headline(&status, 0.0), "cluster reachable");
}

#[test]
fn a_demo_with_no_trouble_has_no_line() {
    let mut status = ClusterStatus::default();
    let source = serde_json::json!({"kind": "demo", "api": "http://x"});
    status.observe(&hello(source, &["pods"]), 0.0);
    assert_eq!(status.line(0.0, &clock), None);
    status.observe(
        &reflector("pods", backoff(1_000, "too many requests (429)")),
        0.0,
    );
    assert!(headline(&status, 0.0).starts_with("the apiserver is failing since t0"));
}
