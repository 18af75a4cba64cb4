//! The driver against a scripted server: what it asks, and what the sink
//! receives, for each release's rules.

use super::*;
use crate::profile::{Gate, Profile, Release};
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

type Obj = Arc<Value>;

/// One item of a scripted watch stream.
type Item = Result<WatchItem<Obj>, Failure>;

fn obj(name: &str, rv: u64) -> Obj {
    Arc::new(
        json!({"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv.to_string()}}),
    )
}

/// A server that answers from a script, then hangs (never answers again).
#[derive(Default)]
struct Scripted {
    lists: RefCell<VecDeque<Result<Page<Obj>, Failure>>>,
    watches: RefCell<VecDeque<Result<Vec<Item>, Failure>>>,
    /// The requests made, as `LIST rv=0 limit=500` or `WATCH rv= stream`.
    asked: RefCell<Vec<String>>,
    clock: Cell<Micros>,
    /// Streams told they were taken for dead.
    dead: Cell<u32>,
}

/// Time between two events of a scripted stream.
const EVENT_GAP: Micros = 1_000;

/// A stream of scripted items, one every [`EVENT_GAP`]; `None` at its end
/// closes it unless it hangs.
struct Items<'a> {
    items: VecDeque<Item>,
    hang: bool,
    clock: &'a Cell<Micros>,
    /// How many of the server's streams were told they were taken for dead.
    dead: &'a Cell<u32>,
}

impl WatchStream<Obj> for Items<'_> {
    async fn next(&mut self) -> Option<Item> {
        match self.items.pop_front() {
            Some(item) => {
                self.clock.set(self.clock.get() + EVENT_GAP);
                Some(item)
            }
            None if self.hang => future::pending().await,
            None => None,
        }
    }

    fn taken_for_dead(&mut self) {
        self.dead.set(self.dead.get() + 1);
    }
}

impl ListerWatcher for Scripted {
    type Object = Obj;
    type Stream<'a> = Items<'a>;

    async fn list(&self, r: ListRequest<'_>) -> Result<Page<Obj>, Failure> {
        self.asked
            .borrow_mut()
            .push(format!("LIST rv={} limit={}", r.resource_version, r.limit));
        let next = self.lists.borrow_mut().pop_front();
        match next {
            Some(answer) => answer,
            None => future::pending().await,
        }
    }

    async fn watch(&self, r: WatchRequest<'_>) -> Result<Items<'_>, Failure> {
        let kind = if r.send_initial_events { " stream" } else { "" };
        self.asked
            .borrow_mut()
            .push(format!("WATCH rv={}{kind}", r.resource_version));
        // Long enough that no watch is "very short".
        self.clock.set(self.clock.get() + 2_000_000);
        let next = self.watches.borrow_mut().pop_front();
        match next {
            Some(Ok(items)) => {
                let hang = self.watches.borrow().is_empty();
                Ok(Items {
                    items: items.into(),
                    hang,
                    clock: &self.clock,
                    dead: &self.dead,
                })
            }
            Some(Err(failure)) => Err(failure),
            None => future::pending().await,
        }
    }
}

impl Timer for Scripted {
    fn now(&self) -> Micros {
        self.clock.get()
    }

    async fn sleep(&self, d: Duration) {
        self.clock.set(self.clock.get() + d.as_micros() as u64);
    }
}

/// What the sink received, one line each.
#[derive(Default)]
struct Received(Vec<String>, ReadTimes);

/// Each replace's completion time, and its objects' read times.
type ReadTimes = Vec<(Micros, Vec<Micros>)>;

impl Sink<Obj> for Received {
    fn report(&mut self, state: ReflectorState) {
        let name = format!("{state:?}");
        let name = name.split([' ', '{', '(']).next().unwrap_or_default();
        self.0.push(format!("report {name}"));
    }
    fn replace(&mut self, objects: Vec<Listed<Obj>>, rv: &str, at: Micros) {
        let keys: Vec<_> = objects.iter().map(|l| l.object.key().to_string()).collect();
        self.0.push(format!("replace {rv} {keys:?}"));
        self.1
            .push((at, objects.iter().map(|l| l.read_at).collect()));
    }
    fn delta(&mut self, t: EventType, o: Obj, _at: Micros) {
        self.0
            .push(format!("{t:?} {} {}", o.key(), o.resource_version()));
    }
    fn marker(&mut self, t: EventType, rv: &str, _at: Micros) {
        self.0.push(format!("{t:?} {rv}"));
    }
    fn resync(&mut self) {
        self.0.push("resync".into());
    }
}

/// Runs the driver until the script is spent.
fn drive(server: &Scripted, profile: Profile) -> Vec<String> {
    drive_timed(server, profile).0
}

/// Runs the driver until the script is spent; also says when each replace's
/// objects were read.
fn drive_timed(server: &Scripted, profile: Profile) -> (Vec<String>, ReadTimes) {
    drive_with(server, Config::for_profile(profile))
}

/// Like [`drive_timed`], with the Reflector's config.
fn drive_with(server: &Scripted, config: Config) -> (Vec<String>, ReadTimes) {
    let mut sink = Received::default();
    {
        let run = pin!(run(server, &mut sink, server, config, 1));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(run.poll(&mut cx) == Poll::Pending);
    }
    (sink.0, sink.1)
}

fn end(rv: u64) -> Item {
    Ok(WatchItem::Bookmark {
        resource_version: rv.to_string(),
        initial_events_end: true,
    })
}

#[test]
fn a_streaming_list_replaces_the_store_at_its_bookmark_and_watches_on() {
    let server = Scripted::default();
    server.watches.borrow_mut().push_back(Ok(vec![
        Ok(WatchItem::Added(obj("b", 7))),
        Ok(WatchItem::Added(obj("a", 9))),
        Ok(WatchItem::Added(obj("c", 3))),
        Ok(WatchItem::Deleted(obj("c", 3))),
        end(10),
        Ok(WatchItem::Modified(obj("a", 11))),
    ]));
    let got = drive(&server, Profile::new(Release::V1_36));
    assert_eq!(*server.asked.borrow(), ["WATCH rv= stream"]);
    assert_eq!(
        got,
        [
            "report StreamingListStarted",
            "Bookmark 10",
            r#"replace 10 ["ns/b", "ns/a"]"#,
            "report InitialEventsEnd",
            "Modified ns/a 11",
        ]
    );
}

#[test]
fn each_streamed_object_keeps_the_time_it_was_read_and_a_listed_page_its_own() {
    let server = Scripted::default();
    server.watches.borrow_mut().push_back(Ok(vec![
        Ok(WatchItem::Added(obj("b", 7))),
        Ok(WatchItem::Added(obj("a", 9))),
        Ok(WatchItem::Modified(obj("b", 10))),
        end(10),
    ]));
    let (_, times) = drive_timed(&server, Profile::new(Release::V1_36));
    let [(complete, read)] = times.as_slice() else {
        panic!("one replace: {times:?}")
    };
    // b was read again after a, and the list was complete at the bookmark.
    let (b, a) = (read[0], read[1]);
    assert_eq!(b - a, EVENT_GAP, "{read:?}");
    assert_eq!(*complete - b, EVENT_GAP, "{read:?} then {complete}");

    let server = Scripted::default();
    server.lists.borrow_mut().extend([
        Ok(Page {
            items: vec![obj("a", 4)],
            resource_version: "5".into(),
            continue_token: Some("next".into()),
        }),
        Ok(Page {
            items: vec![obj("b", 5)],
            resource_version: "5".into(),
            continue_token: None,
        }),
    ]);
    let (_, times) = drive_timed(&server, Profile::new(Release::V1_20));
    let [(complete, read)] = times.as_slice() else {
        panic!("one replace: {times:?}")
    };
    assert!(
        read[0] <= read[1] && read[1] == *complete,
        "{read:?} {complete}"
    );
}

#[test]
fn a_refused_streaming_list_falls_back_to_list_then_watch() {
    let server = Scripted::default();
    server.watches.borrow_mut().extend([
        Err(Failure::Other("422: WatchList is disabled".into())),
        Ok(vec![Ok(WatchItem::Added(obj("d", 6)))]),
    ]);
    server.lists.borrow_mut().push_back(Ok(Page {
        items: vec![obj("a", 4)],
        resource_version: "5".into(),
        continue_token: None,
    }));
    let got = drive(&server, Profile::new(Release::V1_36));
    assert_eq!(
        *server.asked.borrow(),
        ["WATCH rv= stream", "LIST rv=0 limit=500", "WATCH rv=5"]
    );
    assert_eq!(
        got,
        [
            "report StreamingListStarted",
            "report StreamingListFailed",
            "report ListStarted",
            r#"replace 5 ["ns/a"]"#,
            "report ListFinished",
            "report WatchStarted",
            "Added ns/d 6",
        ]
    );
}

#[test]
fn after_410_a_streaming_relist_goes_from_the_last_resource_version() {
    let server = Scripted::default();
    server.watches.borrow_mut().extend([
        Ok(vec![
            Ok(WatchItem::Added(obj("a", 4))),
            end(5),
            Ok(WatchItem::Modified(obj("a", 8))),
            Ok(WatchItem::Error(Failure::Expired("too old".into()))),
        ]),
        Ok(vec![Ok(WatchItem::Added(obj("a", 8))), end(12)]),
    ]);
    let got = drive(&server, Profile::new(Release::V1_36));
    assert_eq!(
        *server.asked.borrow(),
        ["WATCH rv= stream", "WATCH rv=8 stream"]
    );
    assert!(got.contains(&"Error 8".to_string()), "{got:?}");
    assert_eq!(got.last().unwrap(), "report InitialEventsEnd");
}

#[test]
fn a_watch_silent_past_its_bound_fails_and_the_reflector_lists_again() {
    use crate::reflector::SilentWatch;
    let silent = |silent_watch| {
        let server = Scripted::default();
        server
            .watches
            .borrow_mut()
            .push_back(Ok(vec![Ok(WatchItem::Added(obj("a", 9))), end(10)]));
        let config = Config {
            silent_watch,
            ..Config::for_profile(Profile::new(Release::V1_36))
        };
        let (got, _) = drive_with(&server, config);
        let asked = server.asked.borrow().clone();
        (asked, got, server.dead.get())
    };
    // Trusted: the first watch, silent after its list, is read forever.
    let (asked, _, dead) = silent(SilentWatch::Trusted);
    assert_eq!(asked, ["WATCH rv= stream"]);
    assert_eq!(dead, 0);
    // With a bound: it fails, says why, tells the stream (whose connection
    // the lister-watcher forgets), and the Reflector streams again.
    let (asked, got, dead) = silent(SilentWatch::After(Duration::from_secs(10)));
    assert_eq!(asked, ["WATCH rv= stream", "WATCH rv=10 stream"], "{got:?}");
    assert!(got.contains(&"report WatchEnded".to_string()), "{got:?}");
    assert_eq!(
        dead, 1,
        "the silent stream was not told it was taken for dead"
    );
}

#[test]
fn v1_20_and_the_client_gate_off_list_then_watch() {
    let mut gate_off = Profile::new(Release::V1_36);
    gate_off.set(Gate::WatchListClient, false).unwrap();
    for profile in [Profile::new(Release::V1_20), gate_off] {
        let server = Scripted::default();
        server.lists.borrow_mut().push_back(Ok(Page {
            items: vec![obj("a", 2)],
            resource_version: "3".into(),
            continue_token: None,
        }));
        server.watches.borrow_mut().push_back(Ok(vec![]));
        drive(&server, profile);
        assert_eq!(
            *server.asked.borrow(),
            ["LIST rv=0 limit=500", "WATCH rv=3"],
            "{profile}"
        );
    }
}

#[test]
fn a_paged_list_is_replaced_once_whole() {
    let server = Scripted::default();
    server.lists.borrow_mut().extend([
        Ok(Page {
            items: vec![obj("a", 1)],
            resource_version: "9".into(),
            continue_token: Some("next".into()),
        }),
        Ok(Page {
            items: vec![obj("b", 2)],
            resource_version: "9".into(),
            continue_token: None,
        }),
    ]);
    let got = drive(&server, Profile::new(Release::V1_20));
    assert!(
        got.contains(&r#"replace 9 ["ns/a", "ns/b"]"#.to_string()),
        "{got:?}"
    );
}

/// A sink whose queue holds at most `capacity` deltas; the test takes them.
struct Bounded {
    queue: Rc<RefCell<VecDeque<String>>>,
    capacity: usize,
}

impl Sink<Obj> for Bounded {
    fn report(&mut self, _state: ReflectorState) {}
    fn replace(&mut self, _objects: Vec<Listed<Obj>>, _rv: &str, _at: Micros) {}
    fn delta(&mut self, t: EventType, o: Obj, _at: Micros) {
        self.queue
            .borrow_mut()
            .push_back(format!("{t:?} {}", o.key()));
    }
    fn marker(&mut self, _t: EventType, _rv: &str, _at: Micros) {}
    fn resync(&mut self) {}
    async fn ready(&mut self) {
        std::future::poll_fn(|_| {
            if self.queue.borrow().len() < self.capacity {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

#[test]
fn a_full_sink_holds_the_stream_back_until_it_has_room() {
    let server = Scripted::default();
    server.lists.borrow_mut().push_back(Ok(Page {
        items: vec![],
        resource_version: "1".into(),
        continue_token: None,
    }));
    server.watches.borrow_mut().push_back(Ok(vec![
        Ok(WatchItem::Added(obj("a", 2))),
        Ok(WatchItem::Added(obj("b", 3))),
        Ok(WatchItem::Added(obj("c", 4))),
    ]));
    let queue = Rc::new(RefCell::new(VecDeque::new()));
    let mut sink = Bounded {
        queue: queue.clone(),
        capacity: 2,
    };
    let config = Config::for_profile(Profile::new(Release::V1_20));
    let mut run = pin!(run(&server, &mut sink, &server, config, 1));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(run.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        *queue.borrow(),
        ["Added ns/a", "Added ns/b"],
        "c waits in the stream"
    );
    queue.borrow_mut().pop_front();
    assert!(run.as_mut().poll(&mut cx).is_pending());
    assert_eq!(*queue.borrow(), ["Added ns/b", "Added ns/c"]);
}
