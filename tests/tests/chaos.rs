//! Fault rounds (see `watchlife_tests::chaos`): a real etcd and apiserver,
//! a writer, two watchlife bridges behind a TCP proxy and a TLS-terminating
//! one, and five viewers, three of them through a load balancer in front of
//! the bridges; each
//! round injects one fault, then checks that every viewer holds what the
//! apiserver lists, that no viewer's stream has a gap not announced by a
//! resync or an event twice, that the bridge made no more LISTs than
//! client-go would, that its memory does not drift and that its log has no
//! error.
//!
//! The short form (every fault once but the silent watch, whose round lasts
//! 45 s and which `dead_watch.rs` covers: 16 rounds on v1.20, 15 on v1.36,
//! whose apiserver has no RBAC to revoke; the bridges' backoff capped at
//! `SHORT_FORM_BACKOFF_CAP`) runs with the other tests in both profiles:
//! `--kubernetes 1.36` against apiextensions-apiserver v0.36.4,
//! `--kubernetes 1.20` against kube-apiserver v1.20.2.
//! `make chaos ROUNDS=100 [SEED=…] [KUBERNETES=1.20]` runs the long form of
//! one (`CHAOS_ROUNDS`, `CHAOS_SEED`; a 30 s viewer stall) and writes
//! RELIABILITY.md (`CHAOS_REPORT`); `CHAOS_FAULTS=token-rotated,…` keeps
//! those faults alone.
//!
//! The last tests prove that each invariant can fail: the bridge is started
//! with a test-only fault (`WATCHLIFE_TEST_BREAK`) and the harness must
//! name the invariant it breaks. The faults the rounds inject, and the
//! broken bridge each is shown to catch:
//!
//! | round | broken bridge | invariant |
//! | --- | --- | --- |
//! | etcd-sigkill (etcd-unreachable reaches the bridge no more) | `drop-event` | (b) stream |
//! | proxy-reset | `skip-backoff` | (c) LISTs |
//! | tls-proxy-status, tls-proxy-truncated | `skip-backoff` | (c) LISTs |
//! | bridge-sigkill, two bridges, viewers moving | `skip-resync` | (b) stream |
//! | token-rotated | `token-read-once`; `vague-failures` | (a) objects; (f) told |
//! | rbac-revoked (v1.20) | `vague-failures` | (f) told |
//! | silent-watch | `trust-silent-watch` (`dead_watch.rs`) | the write never arrives |

use std::time::Duration;
use watchlife_tests::chaos::cluster::Kubernetes;
use watchlife_tests::chaos::faults::Fault;
use watchlife_tests::chaos::invariants::Invariant;
use watchlife_tests::chaos::{self, Config};

/// One cluster at a time: each test runs its own etcd and apiserver,
/// and two of them side by side on a small machine would make the timing
/// (and so the LIST bound) a matter of luck.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The seed: `CHAOS_SEED`, or one drawn now (printed, to replay).
fn seed() -> u64 {
    match std::env::var("CHAOS_SEED") {
        Ok(s) if !s.is_empty() => s.parse().expect("CHAOS_SEED is a number"),
        _ => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            now.as_nanos() as u64 ^ u64::from(std::process::id())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fault_rounds_keep_every_viewer_exact_1_36() {
    fault_rounds(Kubernetes::V1_36).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fault_rounds_keep_every_viewer_exact_1_20() {
    fault_rounds(Kubernetes::V1_20).await;
}

/// The rounds of one profile: `CHAOS_ROUNDS` of them (the short form by
/// default); with `CHAOS_REPORT`, RELIABILITY.md written from the run.
async fn fault_rounds(kubernetes: Kubernetes) {
    let _one = ONE_AT_A_TIME.lock().await;
    let long_form: Option<usize> = std::env::var("CHAOS_ROUNDS")
        .ok()
        .filter(|r| !r.is_empty())
        .map(|r| r.parse().expect("CHAOS_ROUNDS is a number"));
    let (rounds, only) = match long_form {
        Some(rounds) => (rounds, Vec::new()),
        None => {
            let short = Fault::short_form(kubernetes);
            (short.len(), short)
        }
    };
    let mut config = Config::new("rounds", seed(), rounds, kubernetes);
    config.only = only;
    if let Ok(names) = std::env::var("CHAOS_FAULTS")
        && !names.is_empty()
    {
        config.only = names
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| Fault::parse(n).unwrap_or_else(|| panic!("CHAOS_FAULTS: no fault {n:?}")))
            .collect();
    }
    if rounds >= 20 {
        config.viewer_stall = Duration::from_secs(30);
    }
    if long_form.is_some() {
        // The long form: client-go's backoff as it is.
        config.backoff_cap = None;
    }
    let (run, failure) = chaos::run(&config).await;
    if let Ok(path) = std::env::var("CHAOS_REPORT")
        && !path.is_empty()
    {
        let path = watchlife_tests::workspace().join(path);
        // `make fuzz` writes the Fuzzing section: it stays.
        let fuzzing = std::fs::read_to_string(&path)
            .ok()
            .and_then(|old| old.find("\n## Fuzzing").map(|at| old[at..].to_string()))
            .unwrap_or_default();
        std::fs::write(&path, run.markdown() + &fuzzing).expect("write the report");
        eprintln!("chaos: wrote {}", path.display());
    }
    if let Some(failure) = failure {
        panic!("{failure}");
    }
}

/// How long the viewers of a broken bridge may take to agree: a working
/// bridge's round settles within seconds (3.9 s for a token round here),
/// and a bridge that lost an event or kept a dead token never does, so
/// waiting the rounds' full 90 s would prove nothing more.
const BROKEN_SETTLE: Duration = Duration::from_secs(30);

/// A run of `rounds` rounds of `faults` against one bridge broken by
/// `switch`, on v1.36: one bridge is enough to show a broken one, and
/// costs half the CPU.
fn broken_run(switch: &str, faults: &[Fault], rounds: usize) -> Config {
    let mut config = Config::new(switch, seed(), rounds, Kubernetes::V1_36);
    config.only = faults.to_vec();
    config.replicas = 1;
    config.bridge_env = vec![("WATCHLIFE_TEST_BREAK".into(), switch.into())];
    config
}

/// Runs `rounds` rounds of `faults` against a bridge broken by `switch`,
/// and returns the failure the harness must report.
async fn broken(switch: &str, faults: &[Fault], rounds: usize) -> chaos::Failure {
    fails(broken_run(switch, faults, rounds)).await
}

/// [`broken`], the viewers given `settle` to agree.
async fn broken_with(
    switch: &str,
    faults: &[Fault],
    rounds: usize,
    settle: Duration,
) -> chaos::Failure {
    let mut config = broken_run(switch, faults, rounds);
    config.settle = settle;
    fails(config).await
}

/// Runs `config`, a broken bridge's run, and returns the failure the
/// harness must report.
async fn fails(config: Config) -> chaos::Failure {
    let _one = ONE_AT_A_TIME.lock().await;
    // A broken run is labelled with its switch (see `broken_run`).
    let switch = config.label.clone();
    match chaos::run(&config).await {
        (run, None) => panic!(
            "the harness passed a bridge broken by WATCHLIFE_TEST_BREAK={switch}: {}",
            run.summary()
        ),
        (_, Some(failure)) => {
            eprintln!("as expected, WATCHLIFE_TEST_BREAK={switch} fails:\n{failure}");
            failure
        }
    }
}

/// In an etcd round: etcd's loss and return reach the bridge only as a
/// pause in the apiserver's events (no watch of it ends, no LIST is made),
/// so what such a round can show is that its checks still hold a broken
/// bridge to account: here one that lost an event frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_event_frame_breaks_the_stream_invariant() {
    let failure = broken_with("drop-event", &[Fault::EtcdKill], 1, BROKEN_SETTLE).await;
    assert_eq!(failure.invariant, Invariant::Stream, "{failure}");
    assert!(failure.message.contains("seq gap"), "{failure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relisting_without_backoff_breaks_the_list_bound() {
    let failure = broken("skip-backoff", &[Fault::ProxyReset], 2).await;
    assert_eq!(failure.invariant, Invariant::Lists, "{failure}");
}

/// The same fault through the TLS-terminating proxy: a bridge that answers
/// 429s and 503s by listing again at once breaks the bound too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relisting_without_backoff_after_http_errors_breaks_the_list_bound() {
    let failure = broken("skip-backoff", &[Fault::TlsStatus], 1).await;
    assert_eq!(failure.invariant, Invariant::Lists, "{failure}");
}

/// And so does one that lists again at once after a body cut short: a LIST
/// or WATCH whose answer stops a few bytes in is a failed request, which
/// client-go meets with its backoff like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relisting_without_backoff_after_cut_bodies_breaks_the_list_bound() {
    let failure = broken("skip-backoff", &[Fault::TlsTruncated], 1).await;
    assert_eq!(failure.invariant, Invariant::Lists, "{failure}");
}

/// Two bridges behind the viewers' load balancer, one of them killed and
/// restarted: a viewer of the killed one that resumes on the other, or on
/// the new process, with its cursor of the old stream must be told that its
/// stream changed (so must the viewers that hang up and resume through the
/// balancer meanwhile, landing on either bridge).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_without_resync_breaks_the_stream_invariant() {
    let mut config = broken_run("skip-resync", &[Fault::BridgeKill], 1);
    config.replicas = 2;
    let failure = fails(config).await;
    assert_eq!(failure.invariant, Invariant::Stream, "{failure}");
    assert!(
        failure.message.contains("not announced by a resync"),
        "{failure}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_token_kept_for_ever_breaks_the_object_invariant_when_it_is_rotated() {
    let failure = broken_with("token-read-once", &[Fault::TokenRotated], 1, BROKEN_SETTLE).await;
    assert_eq!(failure.invariant, Invariant::Objects, "{failure}");
    assert!(failure.timeline.contains("answered 401"), "{failure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failure_told_without_its_cause_breaks_the_told_invariant() {
    let failure = broken_with("vague-failures", &[Fault::TokenRotated], 1, BROKEN_SETTLE).await;
    assert_eq!(failure.invariant, Invariant::Told, "{failure}");
    assert!(failure.message.contains("no viewer was told"), "{failure}");
}

/// The RBAC round, on kube-apiserver v1.20 (the v0.36 apiserver has no
/// authorizer): a bridge that tells its viewers a LIST failed, but not that
/// it was forbidden, leaves the page unable to say which grant is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_revoked_grant_told_without_its_cause_breaks_the_told_invariant() {
    let mut config = broken_run("vague-failures", &[Fault::RbacRevoked], 1);
    config.kubernetes = Kubernetes::V1_20;
    config.settle = BROKEN_SETTLE;
    let failure = fails(config).await;
    assert_eq!(failure.invariant, Invariant::Told, "{failure}");
    assert!(
        failure.message.contains("no viewer was told of a 403"),
        "{failure}"
    );
}

/// (a) without a cluster: a viewer missing an object, holding one that is
/// gone, or holding an old version, is told apart from one that agrees.
#[test]
fn the_object_invariant_names_lost_phantom_and_stale_objects() {
    use std::collections::BTreeMap;
    use watchlife_tests::chaos::model::{counts, differences};
    let truth: BTreeMap<String, String> = [("cm/a/x", "5"), ("cm/a/y", "7"), ("cm/b/z", "9")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    assert_eq!(differences(&truth, &truth.clone()), "");
    let mut seen = truth.clone();
    seen.remove("cm/a/x");
    seen.insert("cm/a/gone".into(), "3".into());
    seen.insert("cm/b/z".into(), "8".into());
    let (lost, phantom, stale) = counts(&truth, &seen);
    assert_eq!(lost, ["cm/a/x"]);
    assert_eq!(phantom, ["cm/a/gone"]);
    assert_eq!(stale, ["cm/b/z at 8, listed at 9"]);
    assert!(differences(&truth, &seen).starts_with("1 lost"));
}

/// (e) without a cluster: an ERROR or a panic in the bridge's stderr is
/// caught through the terminal colours; a WARN is not.
#[test]
fn the_log_invariant_catches_errors_and_panics() {
    use watchlife_tests::chaos::invariants::bad_log_lines;
    let log = "\u{1b}[2m2026-11-23T21:48:25Z\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m watchlife::upstream::reflector: WATCH failed\n\
               \u{1b}[2m2026-11-23T21:48:26Z\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m watchlife::upstream::source: it broke\n\
               thread 'tokio-runtime-worker' panicked at bridge/src/hub.rs:1:1:\n";
    let bad = bad_log_lines(log, Fault::ProxyReset);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad[0].contains("ERROR watchlife::upstream::source"),
        "{bad:?}"
    );
    assert!(bad[1].contains("panicked"), "{bad:?}");
}

/// (c) without a cluster: the bound of a fault that never reaches the
/// upstream is one relist per resource; otherwise one cycle per 0.8 s.
#[test]
fn the_list_bound_follows_client_gos_backoff() {
    use watchlife_tests::chaos::invariants::list_bound;
    assert_eq!(
        list_bound(Fault::ViewerStall, Duration::from_secs(60), 2).0,
        2
    );
    assert_eq!(
        list_bound(Fault::ProxyReset, Duration::from_secs(8), 2).0,
        22
    );
    assert_eq!(
        list_bound(Fault::BridgeKill, Duration::from_secs(4), 2).0,
        14
    );
}

/// HTTP 429, 500 and 503 from the API (which needs plain HTTP: the demo's
/// API, as the real apiserver speaks TLS only). A demo bridge serves the
/// API with its workload running; a second bridge watches it through the
/// proxy, which answers every request with the status for 3 s. Its viewers
/// must still hold what the API lists, within client-go's LIST bound, with
/// no ERROR in its log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_errors_from_the_api_lose_nothing_and_stay_within_the_list_bound() {
    use watchlife_testkit::client::Client;
    use watchlife_tests::bridge::Bridge;
    use watchlife_tests::chaos::cluster::PODS;
    use watchlife_tests::chaos::invariants::{bad_log_lines, list_bound, metric};
    use watchlife_tests::chaos::model::differences;
    use watchlife_tests::chaos::proxy::{Mode, Proxy, kubeconfig_through};
    use watchlife_tests::chaos::viewers::{Follower, Style};
    use watchlife_tests::chaos::writer::listed;

    let _one = ONE_AT_A_TIME.lock().await;
    let api: std::net::SocketAddr = format!("127.0.0.1:{}", watchlife_tests::free_port())
        .parse()
        .unwrap();
    let api_flag = api.to_string();
    let demo = Bridge::start(&["--demo", "--demo-rate", "5", "--demo-api", &api_flag]).await;
    let demo_kubeconfig = demo
        .cache_dir()
        .join("watchlife")
        .join(format!("{}-demo.kubeconfig", api.port()));
    let proxy = Proxy::start(api).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    kubeconfig_through(
        &demo_kubeconfig,
        &kubeconfig,
        &format!("http://{api}"),
        proxy.addr,
    );
    let log = watchlife_tests::artifacts().join("chaos-http-status-watchlife.log");
    let _ = std::fs::remove_file(&log);
    let addr = format!("127.0.0.1:{}", watchlife_tests::free_port())
        .parse()
        .unwrap();
    let bridge = Bridge::start_logged(
        addr,
        &[
            "--kubernetes",
            "1.20",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--resources",
            "pods",
        ],
        &[],
        &log,
    )
    .await;
    let viewers = [
        Follower::start("full-speed".into(), Style::FullSpeed, bridge.ws_url(), 1),
        Follower::start("resuming".into(), Style::Resuming, bridge.ws_url(), 2),
    ];
    let client = Client::new(&format!("http://{api}"), None);
    // The demo's workload never pauses: the viewers must hold what the API
    // lists at some moment (they follow it within milliseconds).
    let settle = async || {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let truth = listed(&client, &[PODS]).await;
            let diffs: Vec<String> = viewers
                .iter()
                .map(|v| v.state(|m| differences(&truth, &m.objects)))
                .filter(|d| !d.is_empty())
                .collect();
            if diffs.is_empty() && !truth.is_empty() {
                return truth.len();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "(a) objects: the viewers do not hold what the demo API lists within 60 s: {diffs:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let lists = async || {
        let reply = watchlife_tests::http::get(bridge.addr, "/metrics")
            .await
            .unwrap();
        metric(&reply.text(), "watchlife_lists_total") as u64
    };
    settle().await;
    for code in [429, 500, 503] {
        let before = lists().await;
        let t0 = std::time::Instant::now();
        proxy
            .misbehave(Mode::Status(code), Duration::from_secs(3))
            .await;
        let objects = settle().await;
        let made = lists().await - before;
        let (bound, rule) = list_bound(Fault::ProxyDrop, t0.elapsed(), 1);
        eprintln!(
            "HTTP {code} for 3 s: {objects} pods agree, {made} LISTs (bound {bound}), {:.1} s",
            t0.elapsed().as_secs_f64()
        );
        assert!(made <= bound, "(c) LISTs: {made} after HTTP {code}; {rule}");
        for viewer in &viewers {
            let violations = viewer.state(|m| m.violations.clone());
            assert!(
                violations.is_empty(),
                "(b) stream: {}: {violations:?}",
                viewer.name
            );
        }
    }
    let bad = bad_log_lines(
        &std::fs::read_to_string(&log).unwrap_or_default(),
        Fault::ProxyDrop,
    );
    assert!(bad.is_empty(), "(e) logs: {bad:?}");
}
