//! A crowd of WebSocket viewers in the bench process, for the sections that
//! connect many: each viewer is a task, and a few connect at a time.

use crate::machine::fd_limit;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// File descriptors kept free for everything else in the bench.
const SPARE_FDS: u64 = 512;

/// Files this process may open, and the viewers that leaves room for.
pub fn affordable() -> (u64, usize) {
    let limit = fd_limit();
    (limit, limit.saturating_sub(SPARE_FDS) as usize)
}

/// Viewer tasks, at most `at_once` of them connecting at a time; aborted
/// on drop.
pub struct Crowd {
    gate: Arc<Semaphore>,
    at_once: usize,
    viewers: Vec<JoinHandle<()>>,
}

impl Crowd {
    pub fn new(at_once: usize) -> Crowd {
        Crowd {
            gate: Arc::new(Semaphore::new(at_once)),
            at_once,
            viewers: Vec::new(),
        }
    }

    /// Spawns `viewer(permit)` until there are `n` viewers; returns when each
    /// has connected or failed. A viewer drops its permit once it has.
    pub async fn grow_to<F>(&mut self, n: usize, mut viewer: impl FnMut(OwnedSemaphorePermit) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        while self.viewers.len() < n {
            let permit = self
                .gate
                .clone()
                .acquire_owned()
                .await
                .expect("never closed");
            self.viewers.push(tokio::spawn(viewer(permit)));
        }
        // Every viewer has connected (or failed) once the gate is whole again.
        let all = self
            .gate
            .acquire_many(self.at_once as u32)
            .await
            .expect("never closed");
        drop(all);
    }

    /// The viewers spawned so far.
    pub fn size(&self) -> usize {
        self.viewers.len()
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        for v in &self.viewers {
            v.abort();
        }
    }
}
