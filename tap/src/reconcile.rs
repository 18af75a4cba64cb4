//! Wrappers around the reconciler and the error policy: same signatures,
//! same results, plus a frame at each call.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use kube::Resource;
use kube::runtime::controller::Action;
use watchlife_protocol::tap::{
    ErrorPolicyFrame, ReconcileEnd, ReconcileResult, ReconcileStart, TapFrame, TapObjectRef,
};

use crate::Tap;
use crate::names::{micros, object_ref, requeue};

/// The tapped reconciler's future: the user's, boxed (so `Unpin`, as
/// `Controller::run` asks), with its end recorded.
pub type TappedReconcile<E> = Pin<Box<dyn Future<Output = Result<Action, E>> + Send>>;

/// Objects whose failed reconcile waits for its error policy: bounded, in
/// case the error policy is not wrapped.
const FAILED_REMEMBERED: usize = 100_000;

impl Tap {
    /// Wraps `reconcile`: calls it exactly as `Controller::run` would and
    /// returns its result unchanged, recording the start (object,
    /// resourceVersion, reason, time since its last watcher event) and the
    /// end (duration, `Action` or error).
    pub fn reconciler<K, Ctx, F, Fut, E>(
        &self,
        mut reconcile: F,
    ) -> impl FnMut(Arc<K>, Arc<Ctx>) -> TappedReconcile<E> + use<K, Ctx, F, Fut, E>
    where
        K: Resource,
        K::DynamicType: Default,
        F: FnMut(Arc<K>, Arc<Ctx>) -> Fut,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        let tap = self.clone();
        move |obj, ctx| {
            let object = object_ref(obj.as_ref());
            let number = tap.started(&object, obj.meta().resource_version.clone());
            let start = Instant::now();
            let future = reconcile(obj, ctx);
            let tap = tap.clone();
            Box::pin(async move {
                let result = future.await;
                tap.ended(number, object, start, &result);
                result
            })
        }
    }

    /// Wraps `error_policy`: calls it and returns its `Action` unchanged,
    /// recording the answer for the failed reconcile.
    pub fn error_policy<K, Ctx, F, E>(
        &self,
        error_policy: F,
    ) -> impl Fn(Arc<K>, &E, Arc<Ctx>) -> Action + use<K, Ctx, F, E>
    where
        K: Resource,
        K::DynamicType: Default,
        F: Fn(Arc<K>, &E, Arc<Ctx>) -> Action,
        E: Display,
    {
        let tap = self.clone();
        move |obj, error, ctx| {
            let object = object_ref(obj.as_ref());
            let message = error.to_string();
            let action = error_policy(obj, error, ctx);
            let reconcile = tap
                .inner
                .failed
                .lock()
                .ok()
                .and_then(|mut failed| failed.remove(&object));
            let requeue = requeue(&action);
            tap.record(|seq, at_us| {
                TapFrame::ErrorPolicy(ErrorPolicyFrame {
                    seq,
                    at_us,
                    reconcile,
                    object,
                    message,
                    action: requeue,
                })
            });
            action
        }
    }

    /// Records a reconcile's start; its number.
    fn started(&self, object: &TapObjectRef, resource_version: Option<String>) -> u64 {
        let reconcile = self.next_reconcile();
        let reason = self.current_reason();
        let since_watcher_event_us = self.since_event(object);
        let object = object.clone();
        self.record(|seq, at_us| {
            TapFrame::ReconcileStart(ReconcileStart {
                seq,
                at_us,
                reconcile,
                object,
                resource_version,
                reason,
                since_watcher_event_us,
            })
        });
        reconcile
    }

    /// Records a reconcile's end.
    fn ended<E: Display>(
        &self,
        reconcile: u64,
        object: TapObjectRef,
        start: Instant,
        result: &Result<Action, E>,
    ) {
        let duration_us = micros(start.elapsed());
        let result = match result {
            Ok(action) => ReconcileResult::Action {
                action: requeue(action),
            },
            Err(e) => {
                if let Ok(mut failed) = self.inner.failed.lock()
                    && (failed.len() < FAILED_REMEMBERED || failed.contains_key(&object))
                {
                    failed.insert(object.clone(), reconcile);
                }
                ReconcileResult::Error {
                    message: e.to_string(),
                }
            }
        };
        self.record(|seq, at_us| {
            TapFrame::ReconcileEnd(ReconcileEnd {
                seq,
                at_us,
                reconcile,
                object,
                duration_us,
                result,
            })
        });
    }
}
