//! The demo actions a viewer sends, fuzzed: whatever their arguments, an
//! action ends in a message or a named error, never a panic, and the demo
//! stays within its bounds however many run.

use proptest::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use watchlife_controlplane::controllers::Demo;
use watchlife_controlplane::limits::{MAX_PODS, MAX_REPLICAS};
use watchlife_controlplane::resource::PODS;
use watchlife_controlplane::{Clock, ControlPlane, demo_action};
use watchlife_protocol::DemoAction;

/// Names a viewer might send: the demo's own, and anything else.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("web".to_string()),
        Just("default".to_string()),
        "[a-z0-9.-]{0,70}",
        "\\PC{0,20}",
    ]
}

fn action() -> impl Strategy<Value = DemoAction> {
    prop_oneof![
        (name(), name(), any::<u32>()).prop_map(|(namespace, name, replicas)| {
            DemoAction::Scale {
                namespace,
                name,
                replicas,
            }
        }),
        (name(), name(), name(), name(), name()).prop_map(
            |(resource, namespace, name, key, value)| DemoAction::Label {
                resource,
                namespace,
                name,
                key,
                value,
            }
        ),
        (name(), name(), "\\PC{0,300}").prop_map(|(namespace, name, image)| {
            DemoAction::SetImage {
                namespace,
                name,
                image,
            }
        }),
        (name(), name()).prop_map(|(namespace, name)| DemoAction::DeletePod { namespace, name }),
        Just(DemoAction::Compact),
        Just(DemoAction::DropWatches),
        Just(DemoAction::SlowWatcher),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_action_is_answered_and_the_demo_stays_within_its_bounds(
        actions in proptest::collection::vec(action(), 1..12),
    ) {
        let now = Arc::new(AtomicU64::new(1_000_000));
        let read = now.clone();
        let cp = ControlPlane::new(Clock::new(move || read.load(Ordering::Relaxed)));
        let mut demo = Demo::new(cp.clone(), Some(std::time::Duration::from_millis(10)));
        for action in actions {
            for _ in 0..4 {
                demo.step(now.fetch_add(50_000, Ordering::Relaxed));
            }
            match demo_action::run(&cp, &action) {
                Ok(message) => prop_assert!(!message.is_empty()),
                Err(e) => prop_assert!(!e.message.is_empty()),
            }
            if let DemoAction::Scale { replicas, .. } = action {
                let refused = demo_action::run(&cp, &action).is_err();
                prop_assert!(u64::from(replicas) <= MAX_REPLICAS || refused);
            }
        }
        for _ in 0..40 {
            demo.step(now.fetch_add(50_000, Ordering::Relaxed));
        }
        prop_assert!(cp.list(PODS, None).0.len() <= MAX_PODS);
    }
}
