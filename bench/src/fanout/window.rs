//! `watchlife`'s cost and output over a window: its CPU time, the bench's,
//! and what its hub published and sent, from its `/metrics`.

use crate::machine::cpu_time;
use crate::process::{Watchlife, get, metric, metric_sum};
use std::time::{Duration, Instant};

/// What `watchlife` did over a window of time.
pub struct Window {
    pub seconds: f64,
    pub cpu: f64,
    /// CPU time of the bench itself: the viewers, mostly.
    pub viewers_cpu: f64,
    pub frames_published: f64,
    pub events_published: f64,
    /// Frames written to viewers, and the WebSocket messages they went in.
    pub frames_sent: f64,
    pub messages_sent: f64,
}

/// Watches `watchlife` for `length`: its CPU time and what its hub published.
pub async fn window(bridge: &Watchlife, length: Duration) -> Result<Window, String> {
    let pid = bridge.pid();
    let read = || async {
        let m = get(bridge.addr, "/metrics").await.unwrap_or_default();
        (
            metric(&m, "watchlife_frames_published_total").unwrap_or(0.0),
            // Events that came out of the informer: what viewers count.
            metric_sum(
                &m,
                "watchlife_stage_latency_seconds_count{stage=\"reconcile\"}",
            ),
            metric(&m, "watchlife_frames_sent_total").unwrap_or(0.0),
            metric(&m, "watchlife_messages_sent_total").unwrap_or(0.0),
        )
    };
    let me = std::process::id();
    let cpu0 = cpu_time(pid).ok_or("watchlife is gone")?;
    let own0 = cpu_time(me).unwrap_or_default();
    let (frames0, events0, sent0, messages0) = read().await;
    let t0 = Instant::now();
    tokio::time::sleep(length).await;
    let cpu1 = cpu_time(pid).ok_or("watchlife is gone")?;
    let own1 = cpu_time(me).unwrap_or_default();
    let (frames1, events1, sent1, messages1) = read().await;
    Ok(Window {
        seconds: t0.elapsed().as_secs_f64(),
        cpu: (cpu1 - cpu0).as_secs_f64(),
        viewers_cpu: own1.saturating_sub(own0).as_secs_f64(),
        frames_published: frames1 - frames0,
        events_published: events1 - events0,
        frames_sent: sent1 - sent0,
        messages_sent: messages1 - messages0,
    })
}
