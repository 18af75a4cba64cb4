//! Fault rounds (see `watchlife_tests::chaos`): a real etcd and
//! kube-apiserver, a writer, one watchlife bridge behind a TCP proxy and
//! five viewers; each round injects one fault, then checks that every
//! viewer holds what the apiserver lists, that no viewer's stream has a gap
//! not announced by a resync or an event twice, that the bridge made no
//! more LISTs than client-go would, that its memory does not drift and that
//! its log has no error.
//!
//! The short form (10 rounds, every fault once) runs with the other tests.
//! `make chaos ROUNDS=100 [SEED=…]` runs the long form (`CHAOS_ROUNDS`,
//! `CHAOS_SEED`; a 30 s viewer stall) and writes RELIABILITY.md
//! (`CHAOS_REPORT`).
//!
//! The last tests prove that each invariant can fail: the bridge is started
//! with a test-only fault (`WATCHLIFE_TEST_BREAK`) and the harness must
//! name the invariant it breaks.

use std::time::Duration;
use watchlife_tests::chaos::faults::Fault;
use watchlife_tests::chaos::invariants::Invariant;
use watchlife_tests::chaos::{self, Config};

/// One cluster at a time: each test runs its own etcd and kube-apiserver,
/// and two of them side by side on a small machine would make the timing
/// (and so the LIST bound) a matter of luck.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Rounds of the short form: every kind of fault once.
const SHORT_ROUNDS: usize = 10;

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
async fn fault_rounds_keep_every_viewer_exact() {
    let _one = ONE_AT_A_TIME.lock().await;
    let rounds = match std::env::var("CHAOS_ROUNDS") {
        Ok(r) if !r.is_empty() => r.parse().expect("CHAOS_ROUNDS is a number"),
        _ => SHORT_ROUNDS,
    };
    let mut config = Config::new("rounds", seed(), rounds);
    if rounds >= 20 {
        config.viewer_stall = Duration::from_secs(30);
    }
    let (run, failure) = chaos::run(&config).await;
    if let Ok(path) = std::env::var("CHAOS_REPORT")
        && !path.is_empty()
    {
        let path = watchlife_tests::workspace().join(path);
        std::fs::write(&path, run.markdown()).expect("write the report");
        eprintln!("chaos: wrote {}", path.display());
    }
    if let Some(failure) = failure {
        panic!("{failure}");
    }
}

/// Runs `rounds` rounds of `faults` against a bridge broken by `switch`,
/// and returns the failure the harness must report.
async fn broken(switch: &str, faults: &[Fault], rounds: usize) -> chaos::Failure {
    let _one = ONE_AT_A_TIME.lock().await;
    let mut config = Config::new(switch, seed(), rounds);
    config.only = faults.to_vec();
    config.bridge_env = vec![("WATCHLIFE_TEST_BREAK".into(), switch.into())];
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_event_frame_breaks_the_stream_invariant() {
    let failure = broken("drop-event", &[Fault::ViewerStall], 1).await;
    assert_eq!(failure.invariant, Invariant::Stream, "{failure}");
    assert!(failure.message.contains("seq gap"), "{failure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relisting_without_backoff_breaks_the_list_bound() {
    let failure = broken("skip-backoff", &[Fault::ProxyReset], 2).await;
    assert_eq!(failure.invariant, Invariant::Lists, "{failure}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_without_resync_breaks_the_stream_invariant() {
    let failure = broken("skip-resync", &[Fault::BridgeKill], 1).await;
    assert_eq!(failure.invariant, Invariant::Stream, "{failure}");
    assert!(
        failure.message.contains("not announced by a resync"),
        "{failure}"
    );
}
