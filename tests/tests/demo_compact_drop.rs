//! The demo's "compact" then "drop watches": the compaction passes the watch
//! caches, which relist and close their watches; the bridge's Reflectors
//! re-watch from a resourceVersion the store no longer keeps, are answered
//! 410 Gone, and list again, as the button promises; dropping the watches
//! then re-watches from the relist. Idle and busy demos alike: a Reflector
//! that a bookmark brought up to date must still meet the 410.

use std::time::Duration;
use watchlife_protocol::{ClientMessage, DemoAction, FrameBody, ReflectorState};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::ws::Viewer;

/// How long an expected frame may take on a busy machine.
const WAIT: Duration = Duration::from_secs(30);

/// Longer than the demo's bookmark interval (5 s per resource), so every
/// Reflector has had a bookmark at the compacted revision before the drop.
const PAST_A_BOOKMARK: Duration = Duration::from_secs(7);

/// Carries out `action` and waits for its result.
async fn act(viewer: &mut Viewer, action: DemoAction) {
    viewer.send(&ClientMessage::Action { action }).await;
    viewer
        .until(WAIT, |f| match &f.body {
            FrameBody::ActionResult(_) => Some(()),
            FrameBody::Error(e) => panic!("the action failed: {e:?}"),
            _ => None,
        })
        .await;
}

async fn compact_then_drop_gives_410_and_a_relist(args: &[&str]) {
    let bridge = Bridge::start(args).await;
    let mut viewer = Viewer::connect(&bridge.ws_url()).await;
    // Past hello and snapshot, with the pods Reflector watching (its state
    // in the snapshot, or live when it started after the viewer came).
    viewer
        .reflector(WAIT, "pods", |s| {
            matches!(
                s,
                ReflectorState::WatchStarted { .. }
                    | ReflectorState::Bookmark { .. }
                    | ReflectorState::InitialEventsEnd { .. }
            )
            .then_some(())
        })
        .await;
    viewer.read_while(tokio::time::sleep(PAST_A_BOOKMARK)).await;
    act(&mut viewer, DemoAction::Compact).await;
    let gone = viewer
        .reflector(WAIT, "pods", |s| match s {
            ReflectorState::Gone { message, .. } => Some(message.clone()),
            _ => None,
        })
        .await;
    assert!(gone.contains("too old"), "{gone}");
    // The relist: a LIST, or (Kubernetes 1.36's rules) a streaming list.
    viewer
        .reflector(WAIT, "pods", |s| {
            matches!(
                s,
                ReflectorState::ListFinished { .. } | ReflectorState::InitialEventsEnd { .. }
            )
            .then_some(())
        })
        .await;
    // Dropping the watches now re-watches from the relist's revision.
    act(&mut viewer, DemoAction::DropWatches).await;
    viewer
        .reflector(WAIT, "pods", |s| {
            matches!(s, ReflectorState::WatchStarted { .. }).then_some(())
        })
        .await;
}

#[tokio::test]
async fn compact_then_drop_watches_gives_410_then_a_relist_in_an_idle_demo() {
    compact_then_drop_gives_410_and_a_relist(&["--demo", "--demo-idle"]).await;
}

#[tokio::test]
async fn compact_then_drop_watches_gives_410_then_a_relist_in_a_busy_demo() {
    compact_then_drop_gives_410_and_a_relist(&["--demo", "--demo-rate", "4"]).await;
}
