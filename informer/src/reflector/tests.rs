//! The Reflector's rules, each checked as client-go v1.20 behaves (and, in
//! `v1_36`, as v0.36 does). Every driver of the machine relies on these.

use super::*;
use crate::profile::{Profile, Release};
use proptest::prelude::*;

const SECOND: Micros = 1_000_000;

fn v1_20() -> Config {
    Config::for_profile(Profile::new(Release::V1_20))
}

fn list(rv: &str, limit: u64) -> Request {
    Request::List {
        resource_version: rv.into(),
        limit,
        continue_token: None,
    }
}

fn reports(step: &Step) -> Vec<&ReflectorState> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Report(state) => Some(state),
            _ => None,
        })
        .collect()
}

fn watch_rv(step: &Step) -> &str {
    match &step.request {
        Request::Watch {
            resource_version, ..
        } => resource_version,
        other => panic!("expected a WATCH, got {other:?}"),
    }
}

fn wait_of(step: &Step) -> Duration {
    match step.request {
        Request::Wait(d) => d,
        ref other => panic!("expected a wait, got {other:?}"),
    }
}

/// A Reflector that listed "0" and is watching from `rv`.
fn watching(rv: &str) -> Reflector {
    let mut r = Reflector::new(v1_20(), 7);
    assert_eq!(r.start(0).request, list("0", PAGE_SIZE));
    let step = r.list_page(3, rv, None, SECOND);
    assert_eq!(watch_rv(&step), rv);
    r
}

#[test]
fn lists_from_zero_in_pages_then_watches_from_the_lists_version() {
    let mut r = Reflector::new(v1_20(), 1);
    let step = r.start(0);
    assert_eq!(step.request, list("0", 500));
    assert_eq!(
        reports(&step),
        [&ReflectorState::ListStarted {
            resource_version: "0".into(),
            limit: 500
        }]
    );
    // A second page is asked with the token and no resourceVersion.
    let step = r.list_page(500, "90", Some("tok"), SECOND);
    assert_eq!(
        step.request,
        Request::List {
            resource_version: String::new(),
            limit: 500,
            continue_token: Some("tok".into()),
        }
    );
    let step = r.list_page(20, "90", None, 2 * SECOND);
    assert_eq!(
        step.effects[0],
        Effect::Replace {
            resource_version: "90".into()
        }
    );
    assert!(reports(&step).contains(&&ReflectorState::ListFinished {
        count: 520,
        resource_version: "90".into()
    }));
    let Request::Watch {
        resource_version,
        timeout_seconds,
        send_initial_events: false,
    } = step.request
    else {
        panic!("a WATCH after the LIST");
    };
    assert_eq!(resource_version, "90");
    assert!((300..600).contains(&timeout_seconds), "{timeout_seconds}");
}

#[test]
fn events_and_bookmarks_move_the_resource_version_and_a_normal_close_rewatches_at_once() {
    let mut r = watching("10");
    assert!(r.watch_event("11", false).is_empty());
    assert_eq!(
        r.watch_event("15", true),
        [Effect::Report(ReflectorState::Bookmark {
            resource_version: "15".into()
        })]
    );
    let step = r.watch_ended(WatchEnd::Closed, 400 * SECOND);
    assert_eq!(watch_rv(&step), "15");
    assert!(matches!(
        reports(&step)[0],
        ReflectorState::WatchEnded { .. }
    ));
    assert_eq!(r.stats().lists, 1);
}

/// The case that once made 4,179 LISTs in 50 s: the apiserver restarts, its
/// new watch cache starts past our resourceVersion.
#[test]
fn an_apiserver_restart_costs_one_unpaged_list_from_the_last_version() {
    let mut r = watching("10");
    r.watch_event("12", false);
    // The stream breaks; watching again is refused while the server is down.
    let step = r.watch_ended(WatchEnd::Closed, 100 * SECOND);
    assert_eq!(watch_rv(&step), "12");
    let step = r.watch_failed(Failure::ConnectionRefused("refused".into()), 100 * SECOND);
    let delay = wait_of(&step);
    assert!(delay >= backoff::INITIAL && delay < 2 * backoff::INITIAL);
    let step = r.waited(101 * SECOND);
    assert_eq!(watch_rv(&step), "12");
    // Back up: the watch from 12 is answered 410 in the stream.
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("too old resource version".into())),
        102 * SECOND,
    );
    assert!(matches!(reports(&step)[0], ReflectorState::Gone { .. }));
    let delay = wait_of(&step);
    assert!(delay >= backoff::INITIAL && delay < 2 * backoff::INITIAL);
    // After the backoff: one LIST from 12, unpaged, so the watch cache serves it.
    let step = r.waited(104 * SECOND);
    assert_eq!(step.request, list("12", 0));
    assert!(matches!(reports(&step)[0], ReflectorState::Relist { .. }));
    let step = r.list_page(2, "40", None, 104 * SECOND);
    assert_eq!(watch_rv(&step), "40");
    assert_eq!(r.stats().lists, 2);
}

#[test]
fn a_list_that_answers_expired_is_asked_again_at_once_from_empty_with_the_same_page_size() {
    let mut r = watching("10");
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("gone".into())),
        SECOND * 5,
    );
    let step = r.waited(SECOND * 5 + wait_of(&step).as_micros() as u64);
    assert_eq!(step.request, list("10", 0));
    let step = r.list_failed(Failure::Expired("too old".into()), 7 * SECOND);
    assert_eq!(step.effects[0], Effect::DiscardPages);
    assert_eq!(step.request, list("", 0));
    // The retry fails too: the cycle ends; the next lists from "" with paging.
    let step = r.list_failed(Failure::Other("unavailable".into()), 8 * SECOND);
    let step = r.waited(8 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(step.request, list("", 500));
    // Once a LIST succeeds, "" is forgotten: the next relist is from the last version.
    let step = r.list_page(1, "70", None, 20 * SECOND);
    assert_eq!(watch_rv(&step), "70");
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Other("forbidden".into())),
        30 * SECOND,
    );
    let step = r.waited(30 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(step.request, list("70", 0));
}

/// `WatchListPageSize` pages every LIST, a relist from a resourceVersion
/// too: a compacted one then answers 410, and the Reflector lists from ""
/// (a consistent read) with the same page size.
#[test]
fn a_watch_list_page_size_pages_the_relist_too_and_its_410_lists_from_empty() {
    let config = Config {
        watch_list_page_size: 50,
        ..v1_20()
    };
    let mut r = Reflector::new(config, 3);
    assert_eq!(r.start(0).request, list("0", 50));
    let step = r.list_page(3, "10", None, SECOND);
    assert_eq!(watch_rv(&step), "10");
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("too old".into())),
        5 * SECOND,
    );
    let step = r.waited(5 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(step.request, list("10", 50));
    let step = r.list_failed(Failure::Expired("too old".into()), 7 * SECOND);
    assert_eq!(step.request, list("", 50));
}

#[test]
fn a_too_large_resource_version_is_retried_from_empty_like_expired() {
    let mut r = Reflector::new(v1_20(), 3);
    r.start(0);
    let step = r.list_failed(Failure::TooLargeResourceVersion("not yet".into()), SECOND);
    assert_eq!(step.request, list("", 500));
}

#[test]
fn an_expired_continuation_page_falls_back_to_the_whole_list_unpaged() {
    let mut r = Reflector::new(v1_20(), 3);
    r.start(0);
    r.list_page(500, "90", Some("tok"), SECOND);
    let step = r.list_failed(Failure::Expired("continue expired".into()), 2 * SECOND);
    assert_eq!(step.effects[0], Effect::DiscardPages);
    assert_eq!(step.request, list("0", 0));
    let step = r.list_page(600, "95", None, 3 * SECOND);
    assert!(reports(&step).contains(&&ReflectorState::ListFinished {
        count: 600,
        resource_version: "95".into()
    }));
}

#[test]
fn a_paged_answer_to_list_from_zero_means_no_watch_cache_so_relists_keep_paging() {
    let mut r = Reflector::new(v1_20(), 3);
    r.start(0);
    r.list_page(500, "90", Some("tok"), SECOND);
    r.list_page(1, "90", None, SECOND);
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("gone".into())),
        9 * SECOND,
    );
    let step = r.waited(9 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(step.request, list("90", 500));
}

#[test]
fn a_watch_refused_with_410_reports_gone_and_relists_from_the_last_version_unpaged() {
    let mut r = watching("10");
    r.watch_ended(WatchEnd::Closed, 400 * SECOND);
    let step = r.watch_failed(Failure::Expired("too old".into()), 401 * SECOND);
    assert!(matches!(reports(&step)[0], ReflectorState::Gone { .. }));
    let step = r.waited(401 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(step.request, list("10", 0));
}

#[test]
fn a_very_short_empty_watch_ends_the_cycle() {
    let mut r = watching("10");
    let step = r.watch_ended(WatchEnd::Closed, SECOND + SECOND / 2);
    assert!(matches!(step.request, Request::Wait(_)));
    let step = r.waited(10 * SECOND);
    assert_eq!(step.request, list("10", 0));
}

#[test]
fn a_refused_watch_other_than_connection_refused_relists_after_the_backoff() {
    let mut r = watching("10");
    let step = r.watch_ended(WatchEnd::Closed, 400 * SECOND);
    assert_eq!(watch_rv(&step), "10");
    let step = r.watch_failed(Failure::Other("forbidden (403)".into()), 400 * SECOND);
    assert!(matches!(reports(&step)[0], ReflectorState::Backoff { .. }));
    let step = r.waited(402 * SECOND);
    assert_eq!(step.request, list("10", 0));
}

#[test]
fn failing_cycles_back_off_doubling_and_reset_after_two_healthy_minutes() {
    let mut r = Reflector::new(v1_20(), 11);
    let mut now = 0;
    r.start(now);
    let mut delays = Vec::new();
    for _ in 0..4 {
        let step = r.list_failed(Failure::Other("forbidden".into()), now);
        let delay = wait_of(&step);
        delays.push(delay);
        now += delay.as_micros() as u64;
        r.waited(now);
    }
    for (i, d) in delays.iter().enumerate() {
        let base = backoff::INITIAL * 2u32.pow(i as u32);
        assert!(*d >= base && *d < 2 * base, "delay {i}: {d:?}");
    }
    r.list_page(0, "5", None, now);
    now += 10 * 60 * SECOND;
    let step = r.watch_ended(WatchEnd::Failed(Failure::Expired("gone".into())), now);
    assert!(wait_of(&step) < 2 * backoff::INITIAL);
}

/// The apiserver's Cacher runs each ListAndWatch from `wait.Until(...,
/// time.Second)`: every failed cycle is followed by exactly the period,
/// however many failed before, while a refused WATCH within a cycle keeps
/// its own backoff.
#[test]
fn a_wait_until_period_paces_every_failed_cycle_exactly() {
    let period = Duration::from_secs(1);
    let config = Config {
        wait_until_period: Some(period),
        ..v1_20()
    };
    let mut r = Reflector::new(config, 11);
    let mut now = 0;
    r.start(now);
    for _ in 0..5 {
        let step = r.list_failed(Failure::Other("forbidden".into()), now);
        assert_eq!(wait_of(&step), period);
        now += period.as_micros() as u64;
        r.waited(now);
    }
    r.list_page(0, "5", None, now);
    let step = r.watch_failed(Failure::ConnectionRefused("refused".into()), now);
    let delay = wait_of(&step);
    assert!(delay >= backoff::INITIAL && delay < 2 * backoff::INITIAL);
    now += delay.as_micros() as u64;
    r.waited(now);
    let step = r.watch_ended(WatchEnd::Failed(Failure::Expired("gone".into())), now);
    assert_eq!(wait_of(&step), period);
    assert!(matches!(
        reports(&step)[1],
        ReflectorState::Backoff { delay_ms: 1000, .. }
    ));
}

#[test]
fn resyncs_are_due_every_period_while_a_cycle_watches() {
    let config = Config {
        resync_period: Duration::from_secs(30),
        ..Config::default()
    };
    let mut r = Reflector::new(config, 5);
    assert_eq!(r.resync_at(), None);
    r.start(0);
    r.list_page(1, "5", None, SECOND);
    assert_eq!(r.resync_at(), Some(31 * SECOND));
    r.resynced(31 * SECOND);
    assert_eq!(r.resync_at(), Some(61 * SECOND));
    r.watch_ended(WatchEnd::Failed(Failure::Other("x".into())), 40 * SECOND);
    assert_eq!(r.resync_at(), None);
}

#[test]
fn with_no_resync_period_none_is_ever_due() {
    let mut r = watching("3");
    r.watch_event("4", false);
    assert_eq!(r.resync_at(), None);
}

/// One input a driver might give, whatever the machine asked.
#[derive(Debug, Clone)]
enum Outcome {
    Ok { more: bool },
    Expired,
    TooLarge,
    Refused,
    Busy,
    Other,
    Event,
    Closed,
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        any::<bool>().prop_map(|more| Outcome::Ok { more }),
        Just(Outcome::Expired),
        Just(Outcome::TooLarge),
        Just(Outcome::Refused),
        Just(Outcome::Busy),
        Just(Outcome::Other),
        Just(Outcome::Event),
        Just(Outcome::Closed),
    ]
}

proptest! {
    /// Whatever the server answers, a LIST that begins a new cycle comes
    /// right after a wait of at least the initial backoff, and every WATCH
    /// goes from the last resourceVersion synced.
    #[test]
    fn two_cycles_never_run_without_the_backoff_between_them(
        outcomes in proptest::collection::vec(outcome(), 1..200),
        seed in any::<u64>(),
        release in prop_oneof![Just(Release::V1_20), Just(Release::V1_36)],
    ) {
        let mut r = Reflector::new(Config::for_profile(Profile::new(release)), seed);
        let mut now: Micros = 0;
        let mut step = r.start(now);
        let mut rv = 100u64;
        for o in outcomes {
            now += 1_000;
            let asked = step.request.clone();
            step = match (&step.request, o) {
                (Request::List { .. }, Outcome::Ok { more }) => {
                    rv += 1;
                    r.list_page(1, &rv.to_string(), more.then_some("t"), now)
                }
                (Request::List { .. }, Outcome::Expired) => r.list_failed(Failure::Expired("e".into()), now),
                (Request::List { .. }, Outcome::TooLarge) => r.list_failed(Failure::TooLargeResourceVersion("t".into()), now),
                (Request::List { .. }, _) => r.list_failed(Failure::Other("o".into()), now),
                (Request::Watch { .. }, Outcome::Refused) => r.watch_failed(Failure::ConnectionRefused("r".into()), now),
                (Request::Watch { .. }, Outcome::Busy) => r.watch_failed(Failure::TooManyRequests("b".into()), now),
                (Request::Watch { send_initial_events: true, .. }, Outcome::Ok { .. }) => {
                    rv += 1;
                    let rv = rv.to_string();
                    let seen = Seen::Bookmark { resource_version: &rv, initial_events_end: true };
                    let (_, effects) = r.observe(seen, now);
                    let replace = Effect::Replace { resource_version: rv.clone() };
                    prop_assert!(effects.contains(&replace), "no Replace in {:?}", effects);
                    now += 2 * SECOND;
                    r.watch_ended(WatchEnd::Closed, now)
                }
                (Request::Watch { .. }, Outcome::Other) => r.watch_failed(Failure::Other("o".into()), now),
                (Request::Watch { .. }, Outcome::Event) => {
                    rv += 1;
                    r.watch_event(&rv.to_string(), false);
                    now += 2 * SECOND;
                    r.watch_ended(WatchEnd::Closed, now)
                }
                (Request::Watch { .. }, Outcome::Expired) => r.watch_ended(WatchEnd::Failed(Failure::Expired("g".into())), now),
                (Request::Watch { .. }, _) => r.watch_ended(WatchEnd::Closed, now),
                (Request::Wait(d), _) => {
                    now += d.as_micros() as u64;
                    r.waited(now)
                }
            };
            let begins_cycle = step.effects.iter().any(|e| matches!(e, Effect::Report(ReflectorState::Relist { .. })));
            if begins_cycle {
                let waited = match asked { Request::Wait(d) => d, _ => Duration::ZERO };
                prop_assert!(waited >= backoff::INITIAL, "a cycle began after {asked:?}");
            }
            match &step.request {
                Request::Watch { resource_version, send_initial_events: false, .. } => {
                    prop_assert_eq!(resource_version, r.last_sync_resource_version());
                }
                // A streaming list goes from the last resourceVersion, or
                // from "" once it was unavailable.
                Request::Watch { resource_version, send_initial_events: true, .. } => {
                    let from_last = resource_version == r.last_sync_resource_version();
                    prop_assert!(resource_version.is_empty() || from_last, "streaming from {:?}", resource_version);
                }
                _ => {}
            }
        }
    }
}

mod v1_36;
