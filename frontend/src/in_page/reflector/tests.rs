//! The page's lister-watcher under the one driver, against a control plane
//! whose stages run inline and a clock the test moves: what each release
//! asks, who answers, and what the driver delivers.

use super::*;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use watchlife_controlplane::limits::Limits;
use watchlife_controlplane::resource::PODS;
use watchlife_informer::profile::{Profile, Release};

/// Long enough past any backoff the Reflector may be waiting out (client-go's
/// cap is 30 s).
const PAST_BACKOFF: Duration = Duration::from_secs(60);

/// Time that only the test moves; a sleep ends once the clock has reached
/// its end, and a sleep of zero at once.
#[derive(Clone)]
struct TestTimer(Arc<AtomicU64>);

impl TestTimer {
    fn advance(&self, by: Duration) {
        self.0.fetch_add(by.as_micros() as u64, Ordering::Relaxed);
    }
}

impl Timer for TestTimer {
    fn now(&self) -> Micros {
        self.0.load(Ordering::Relaxed)
    }

    async fn sleep(&self, duration: Duration) {
        let until = self.now().saturating_add(duration.as_micros() as u64);
        std::future::poll_fn(|_| {
            if self.now() >= until {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

/// What the sink received, one line each; reports by their variant's name.
struct Lines {
    server: Rc<PageServer<TestTimer>>,
    lines: Rc<RefCell<Vec<String>>>,
}

impl Sink<Read> for Lines {
    fn report(&mut self, state: ReflectorState) {
        let name = format!("{state:?}");
        let name = name.split([' ', '{', '(']).next().unwrap_or_default();
        self.lines.borrow_mut().push(format!("report {name}"));
    }

    fn replace(&mut self, objects: Vec<Listed<Read>>, resource_version: &str, _at: Micros) {
        let keys: Vec<_> = objects.iter().map(|l| l.object.key().to_string()).collect();
        self.lines
            .borrow_mut()
            .push(format!("replace {resource_version} {keys:?}"));
    }

    fn delta(&mut self, event_type: EventType, read: Read, _at: Micros) {
        let origin = read.carried.as_ref().map(|d| d.origin);
        self.lines
            .borrow_mut()
            .push(format!("{event_type:?} {} {origin:?}", read.key()));
    }

    fn marker(&mut self, _event_type: EventType, _resource_version: &str, _at: Micros) {}

    fn resync(&mut self) {}

    fn answered(&mut self, _list: bool) {
        let answer = self.server.take_answer().expect("an answer to report");
        self.lines.borrow_mut().push(format!("answer {answer:?}"));
    }
}

/// The driver with `client`'s rules against `cp`, polled by hand.
struct Run {
    cp: ControlPlane,
    timer: TestTimer,
    lines: Rc<RefCell<Vec<String>>>,
    driver: Pin<Box<dyn Future<Output = ()>>>,
}

impl Run {
    fn new(server: Profile, client: Profile) -> Self {
        let now = Arc::new(AtomicU64::new(1_000_000));
        let read = now.clone();
        let cp = ControlPlane::with_profile(
            Clock::new(move || read.load(Ordering::Relaxed)),
            Limits::DEMO,
            server,
        );
        let timer = TestTimer(now);
        let page_server = Rc::new(PageServer::new(cp.clone(), PODS, timer.clone()));
        let lines = Rc::new(RefCell::new(Vec::new()));
        let mut sink = Lines {
            server: page_server.clone(),
            lines: lines.clone(),
        };
        let driver = Box::pin(async move {
            let config = Config::for_profile(client);
            list_watch::run(&*page_server, &mut sink, &page_server.timer, config, 7).await
        });
        Run {
            cp,
            timer,
            lines,
            driver,
        }
    }

    /// Runs the driver until it waits; the lines received since last time.
    fn poll(&mut self) -> Vec<String> {
        // Each request takes a turn; a few polls let every ready one run.
        for _ in 0..8 {
            let _ = self
                .driver
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()));
        }
        std::mem::take(&mut *self.lines.borrow_mut())
    }

    fn create(&self, name: &str) {
        self.cp
            .create(PODS, json!({"metadata": {"name": name}}))
            .unwrap();
    }
}

/// Whether `lines` holds each of `expected`, in that order.
fn in_order(lines: &[String], expected: &[&str]) -> bool {
    let mut rest = lines.iter();
    expected
        .iter()
        .all(|want| rest.any(|line| line.starts_with(want)))
}

#[test]
fn release_1_36_streams_the_list_and_reports_it_as_a_synthetic_watch() {
    let mut run = Run::new(Profile::default(), Profile::default());
    run.create("a");
    let lines = run.poll();
    assert!(
        in_order(
            &lines,
            &[
                "report StreamingListStarted",
                "answer WatchSynthetic { asked: \"\", events: 1 }",
                "replace",
                "report InitialEventsEnd",
            ]
        ),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.starts_with("report ListStarted")));
    assert!(
        lines.iter().any(|l| l.ends_with("[\"default/a\"]")),
        "{lines:#?}"
    );
    run.create("b");
    assert_eq!(run.poll(), ["Added default/b Some(Live)"]);
}

#[test]
fn release_1_20_lists_from_the_watch_cache_then_watches_from_its_revision() {
    let v1_20 = Profile::new(Release::V1_20);
    let mut run = Run::new(v1_20, v1_20);
    run.create("a");
    let lines = run.poll();
    assert!(
        in_order(
            &lines,
            &[
                "report ListStarted",
                "answer ListFromWatchCache { asked: \"0\"",
                "replace",
                "report WatchStarted",
                "answer WatchReplayed",
            ]
        ),
        "{lines:#?}"
    );
    assert!(!lines.iter().any(|l| l.contains("Streaming")), "{lines:#?}");
    run.create("b");
    assert_eq!(run.poll(), ["Added default/b Some(Live)"]);
}

#[test]
fn a_server_without_watch_list_refuses_the_streaming_list_and_the_reflector_lists() {
    let mut server = Profile::default();
    server.set_list("WatchList=false").unwrap();
    let mut run = Run::new(server, Profile::default());
    run.create("a");
    let lines = run.poll();
    assert!(
        in_order(
            &lines,
            &[
                "report StreamingListStarted",
                "report StreamingListFailed",
                "report ListStarted",
                "answer ListFromWatchCache",
                "replace",
                "report WatchStarted",
            ]
        ),
        "{lines:#?}"
    );
}

#[test]
fn a_watch_behind_a_compaction_is_gone_and_the_reflector_relists_after_the_backoff() {
    for release in Release::ALL {
        let profile = Profile::new(release);
        let mut run = Run::new(profile, profile);
        run.create("a");
        run.poll();
        run.create("b");
        assert_eq!(run.poll(), ["Added default/b Some(Live)"], "{release}");
        run.cp.drop_watchers();
        for i in 0..3 {
            run.cp
                .modify(PODS, Some("default"), "a", |p| p["spec"] = json!({"x": i}))
                .unwrap();
        }
        run.cp.compact();
        let lines = run.poll();
        assert!(
            in_order(
                &lines,
                &["report WatchEnded", "report Gone", "report Backoff"]
            ),
            "{release}: {lines:#?}"
        );
        run.timer.advance(PAST_BACKOFF);
        let lines = run.poll();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("replace") && l.contains("default/a")),
            "{release}: relisted: {lines:#?}"
        );
    }
}

#[test]
fn a_watch_ends_at_its_timeout_and_the_reflector_watches_again() {
    let v1_20 = Profile::new(Release::V1_20);
    let mut run = Run::new(v1_20, v1_20);
    run.create("a");
    run.poll();
    run.create("b");
    run.poll();
    // Past the longest watch timeout asked (twice the minimum).
    run.timer
        .advance(2 * watchlife_informer::reflector::MIN_WATCH_TIMEOUT);
    let lines = run.poll();
    assert!(
        in_order(
            &lines,
            &[
                "report WatchEnded",
                "report WatchStarted",
                "answer WatchReplayed"
            ]
        ),
        "{lines:#?}"
    );
}

#[test]
fn answers_name_who_served_the_request() {
    let cache = ServedFrom::WatchCache {
        revision: 5,
        waited: 0,
    };
    let store = ServedFrom::Store { revision: 6 };
    assert!(matches!(
        list_answer("0", 2, cache, None),
        ServerAnswer::ListFromWatchCache {
            revision: 5,
            items: 2,
            ..
        }
    ));
    assert!(matches!(
        list_answer("", 2, store, None),
        ServerAnswer::ListFromEtcd { revision: 6, .. }
    ));
    assert!(matches!(
        list_answer("", 2, cache, Some(6)),
        ServerAnswer::ConsistentList {
            store_revision: 6,
            revision: 5,
            from_cache: true,
            ..
        }
    ));
    assert_eq!(
        watch_answer("", 0, 3, true),
        ServerAnswer::WatchSynthetic {
            asked: String::new(),
            events: 2
        },
        "the initial-events-end bookmark is no initial event"
    );
    assert!(matches!(
        watch_answer("0", 0, 3, false),
        ServerAnswer::WatchSynthetic { events: 3, .. }
    ));
    assert!(matches!(
        watch_answer("9", 9, 1, false),
        ServerAnswer::WatchReplayed { events: 1, .. }
    ));
}

#[test]
fn failures_are_sorted_as_client_go_sorts_the_apiserver_s() {
    assert!(matches!(
        failure_of(ApiError::Gone("too old".into())),
        Failure::Expired(_)
    ));
    assert!(matches!(
        failure_of(ApiError::TooLargeResourceVersion {
            requested: 9,
            current: 3
        }),
        Failure::TooLargeResourceVersion(_)
    ));
    assert!(matches!(
        failure_of(ApiError::NotReady {
            retry_after_seconds: 1
        }),
        Failure::TooManyRequests(_)
    ));
    assert!(matches!(
        failure_of(ApiError::Forbidden("no".into())),
        Failure::Other(_)
    ));
}

/// The output of a future that is ready without waiting.
fn ready<F: Future>(future: F) -> F::Output {
    match std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future waits"),
    }
}

#[test]
fn a_paged_list_goes_on_from_its_continue_token() {
    let v1_20 = Profile::new(Release::V1_20);
    let run = Run::new(v1_20, v1_20);
    for name in ["a", "b", "c"] {
        run.create(name);
    }
    let server = PageServer::new(run.cp.clone(), PODS, run.timer.clone());
    let first = ready(server.list(ListRequest {
        resource_version: "",
        limit: 2,
        continue_token: None,
    }))
    .unwrap();
    assert_eq!(first.items.len(), 2);
    assert!(matches!(
        server.take_answer(),
        Some(ServerAnswer::ListFromEtcd { items: 2, .. })
    ));
    let token = first.continue_token.expect("a page follows");
    let second = ready(server.list(ListRequest {
        resource_version: &first.resource_version,
        limit: 2,
        continue_token: Some(&token),
    }))
    .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.resource_version, first.resource_version);
    assert_eq!(second.continue_token, None);
}

/// The page has no wire between a watcher's buffer and its Reflector, yet
/// the stream's write is read when the page's end of the watch takes the
/// event, not when the Reflector reads it: two reads of the clock.
#[test]
fn an_event_is_written_when_taken_from_its_buffer() {
    let v1_20 = Profile::new(Release::V1_20);
    let run = Run::new(v1_20, v1_20);
    let server = PageServer::new(run.cp.clone(), PODS, run.timer.clone());
    let mut watch = ready(server.watch(WatchRequest {
        resource_version: &run.cp.revision().to_string(),
        timeout_seconds: 60,
        send_initial_events: false,
    }))
    .unwrap();
    run.create("a");
    run.timer.advance(Duration::from_millis(3));
    let taken_at = run.timer.now();
    let Some(Ok(WatchItem::Added(read))) = ready(watch.next()) else {
        panic!("an ADDED")
    };
    assert_eq!(read.written_at, taken_at);
    assert!(read.carried.unwrap().buffered_at < taken_at);
}
