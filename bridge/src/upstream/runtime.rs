//! The runtime of everything upstream of the hub: the source (the demo
//! control plane, its story and its API, or a cluster's client), the
//! Reflectors, the informer pipelines and the demo's reporters.
//!
//! Viewers' connections run on the main runtime, these on a runtime of their
//! own, with threads of their own. Sharing one runtime, a crowd of viewers
//! starved the informer: each hop from one informer stage to the next waited
//! its turn behind every ready viewer task, and with 1,000 viewers an event
//! took seconds to go from the Reflector to the hub (BENCHMARKS.md, fan-out).
//! With threads of its own, the upstream gets its share of the CPU from the
//! kernel however many viewers there are; viewers that cannot keep up fall
//! behind and are resynced, as the slow-viewer policy says, and the stream
//! itself stays on time.

use std::future::Future;
use std::sync::OnceLock;
use tokio::runtime::Runtime;

/// Worker threads of the upstream runtime. At 5,000 changes a second the
/// demo's story, its HTTP API and the informer each keep about a core busy;
/// two threads let them run side by side where there are cores, and the
/// viewers' runtime keeps its own threads for the fan-out.
pub const THREADS: usize = 2;

/// Runs `future` on the upstream runtime, and every task it spawns there;
/// returns its output. A panic in `future` is raised again in the caller.
pub async fn run<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match runtime().spawn(future).await {
        Ok(output) => output,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("the upstream runtime stopped: {e}"),
    }
}

/// The process's one upstream runtime, started on first use and never
/// dropped (a runtime cannot be dropped from inside another).
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(THREADS)
            .thread_name("watchlife-upstream")
            .enable_all()
            .build()
            .expect("the upstream runtime starts (threads and timers)")
    })
}
