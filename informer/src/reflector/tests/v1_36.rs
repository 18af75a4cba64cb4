//! client-go v0.36.4's rules (`tools/cache/reflector.go`: `ListAndWatch`,
//! `watchList`, `watch`, `isWatchErrorRetriable`), each as it behaves.

use super::*;

fn v1_36() -> Config {
    Config::for_profile(Profile::new(Release::V1_36))
}

fn streaming_rv(step: &Step) -> &str {
    match &step.request {
        Request::Watch {
            resource_version,
            send_initial_events: true,
            ..
        } => resource_version,
        other => panic!("expected a streaming list, got {other:?}"),
    }
}

fn plain_watch_rv(step: &Step) -> &str {
    match &step.request {
        Request::Watch {
            resource_version,
            send_initial_events: false,
            ..
        } => resource_version,
        other => panic!("expected a plain WATCH, got {other:?}"),
    }
}

fn end_bookmark(rv: &str) -> Seen<'_> {
    Seen::Bookmark {
        resource_version: rv,
        initial_events_end: true,
    }
}

/// A 1.36 Reflector whose streaming list of three objects ended at `rv`.
fn streamed(rv: &str) -> Reflector {
    let mut r = Reflector::new(v1_36(), 5);
    let step = r.start(0);
    assert_eq!(streaming_rv(&step), "");
    for added in ["7", "3", "9"] {
        assert_eq!(r.observe(Seen::Added(added), SECOND).0, Route::Gather);
    }
    let (_, effects) = r.observe(end_bookmark(rv), SECOND);
    assert_eq!(
        effects[0],
        Effect::Replace {
            resource_version: rv.into()
        }
    );
    r
}

#[test]
fn a_cycle_opens_a_streaming_list_from_the_most_recent_state() {
    let mut r = Reflector::new(v1_36(), 1);
    let step = r.start(0);
    assert_eq!(streaming_rv(&step), "");
    let Request::Watch {
        timeout_seconds, ..
    } = step.request
    else {
        unreachable!()
    };
    assert!((300..600).contains(&timeout_seconds), "{timeout_seconds}");
    assert_eq!(
        reports(&step),
        [&ReflectorState::StreamingListStarted {
            resource_version: String::new(),
            timeout_seconds
        }]
    );
    assert_eq!(r.stats().lists, 0, "no LIST is made");
}

#[test]
fn initial_events_are_gathered_until_the_annotated_bookmark_then_the_stream_watches_on() {
    let mut r = Reflector::new(v1_36(), 2);
    r.start(0);
    // The synthetic ADDEDs come in no order of resourceVersion: none of
    // them moves the last synced resourceVersion.
    assert_eq!(
        r.observe(Seen::Added("12"), SECOND),
        (Route::Gather, vec![])
    );
    assert_eq!(r.observe(Seen::Added("4"), SECOND), (Route::Gather, vec![]));
    assert_eq!(r.last_sync_resource_version(), "");
    let (route, effects) = r.observe(end_bookmark("20"), SECOND);
    assert_eq!(route, Route::Gather);
    assert_eq!(
        effects,
        [
            Effect::Replace {
                resource_version: "20".into()
            },
            Effect::Report(ReflectorState::InitialEventsEnd {
                count: 2,
                resource_version: "20".into()
            })
        ]
    );
    assert_eq!(r.last_sync_resource_version(), "20");
    // The same stream now carries live events.
    assert_eq!(
        r.observe(Seen::Modified("21"), 2 * SECOND).0,
        Route::Deliver
    );
    assert_eq!(r.last_sync_resource_version(), "21");
    // When it ends normally, a plain WATCH follows from there.
    let step = r.watch_ended(WatchEnd::Closed, 400 * SECOND);
    assert_eq!(plain_watch_rv(&step), "21");
}

#[test]
fn a_server_without_watch_list_makes_the_same_cycle_fall_back_to_list_then_watch() {
    let mut r = Reflector::new(v1_36(), 3);
    r.start(0);
    let refusal = Failure::Other("422 Unprocessable Entity: sendInitialEvents is forbidden".into());
    let step = r.watch_failed(refusal, SECOND);
    assert!(matches!(
        reports(&step)[0],
        ReflectorState::StreamingListFailed { .. }
    ));
    assert_eq!(step.request, list("0", PAGE_SIZE));
    let step = r.list_page(2, "30", None, 2 * SECOND);
    assert_eq!(plain_watch_rv(&step), "30");
    // The next cycle tries the streaming list again first.
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("gone".into())),
        500 * SECOND,
    );
    let step = r.waited(500 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(streaming_rv(&step), "30");
}

#[test]
fn after_410_the_next_cycle_streams_from_the_last_resource_version() {
    let mut r = streamed("20");
    r.observe(Seen::Modified("25"), 2 * SECOND);
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("too old resource version".into())),
        100 * SECOND,
    );
    let delay = wait_of(&step);
    assert!(delay >= backoff::INITIAL);
    let step = r.waited(100 * SECOND + delay.as_micros() as u64);
    assert!(matches!(reports(&step)[0], ReflectorState::Relist { .. }));
    assert_eq!(streaming_rv(&step), "25");
}

#[test]
fn an_expired_streaming_list_streams_again_at_once_from_the_most_recent() {
    let mut r = streamed("20");
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("gone".into())),
        100 * SECOND,
    );
    let step = r.waited(100 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(streaming_rv(&step), "20");
    // The server no longer has 20: stream again at once from "".
    let step = r.watch_failed(Failure::Expired("too old".into()), 102 * SECOND);
    assert_eq!(streaming_rv(&step), "");
    assert!(matches!(reports(&step)[0], ReflectorState::Gone { .. }));
    // Once the initial events end, the resourceVersion is usable again.
    r.observe(end_bookmark("40"), 103 * SECOND);
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::Expired("gone".into())),
        200 * SECOND,
    );
    let step = r.waited(200 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(streaming_rv(&step), "40");
}

#[test]
fn a_busy_or_unreachable_server_is_waited_for_then_streamed_again() {
    for failure in [
        Failure::TooManyRequests("watch cache is initializing".into()),
        Failure::ConnectionRefused("refused".into()),
    ] {
        let mut r = Reflector::new(v1_36(), 4);
        r.start(0);
        let step = r.watch_failed(failure, SECOND);
        let delay = wait_of(&step);
        assert!(delay >= backoff::INITIAL && delay < 2 * backoff::INITIAL);
        let step = r.waited(SECOND + delay.as_micros() as u64);
        assert_eq!(streaming_rv(&step), "");
        assert_eq!(r.stats().lists, 0);
    }
}

#[test]
fn a_stream_that_closes_before_its_initial_events_end_is_opened_again_at_once() {
    let mut r = Reflector::new(v1_36(), 6);
    r.start(0);
    r.observe(Seen::Added("3"), SECOND / 2);
    let step = r.watch_ended(WatchEnd::Closed, 5 * SECOND);
    assert_eq!(step.effects[0], Effect::DiscardPages);
    assert_eq!(streaming_rv(&step), "");
}

#[test]
fn a_very_short_empty_streaming_list_falls_back_to_list() {
    let mut r = Reflector::new(v1_36(), 6);
    r.start(0);
    let step = r.watch_ended(WatchEnd::Closed, SECOND / 2);
    assert_eq!(step.request, list("0", PAGE_SIZE));
}

#[test]
fn a_429_ends_no_cycle_in_1_36_but_does_in_1_20() {
    let mut r = streamed("20");
    let step = r.watch_ended(WatchEnd::Closed, 400 * SECOND);
    assert_eq!(plain_watch_rv(&step), "20");
    let step = r.watch_failed(Failure::TooManyRequests("busy".into()), 400 * SECOND);
    let step = r.waited(400 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(plain_watch_rv(&step), "20");
    let step = r.watch_ended(
        WatchEnd::Failed(Failure::TooManyRequests("busy".into())),
        500 * SECOND,
    );
    let step = r.waited(500 * SECOND + wait_of(&step).as_micros() as u64);
    assert_eq!(plain_watch_rv(&step), "20");
    assert_eq!(r.stats().cycles_failed, 0);

    let mut old = watching("20");
    let step = old.watch_failed(Failure::TooManyRequests("busy".into()), SECOND);
    let step = old.waited(SECOND + wait_of(&step).as_micros() as u64);
    assert!(matches!(reports(&step)[0], ReflectorState::Relist { .. }));
}

#[test]
fn with_the_client_gate_off_1_36_lists_then_watches() {
    let mut profile = Profile::new(Release::V1_36);
    profile.set(crate::Gate::WatchListClient, false).unwrap();
    let mut r = Reflector::new(Config::for_profile(profile), 8);
    assert_eq!(r.start(0).request, list("0", PAGE_SIZE));
    let step = r.list_page(1, "9", None, SECOND);
    assert_eq!(plain_watch_rv(&step), "9");
}
