//! One run's two halves: the demo's story at full pace with viewers added
//! step by step, and the crowd on an idle demo under the bench's writes.

use super::viewer::{DECODE_EVERY, Shared, view};
use super::window::window;
use super::writer::write_configmap;
use super::{CONNECTING, Config, Figures, Idle, SETTLE, SETTLE_MAX, Step, WINDOW};
use crate::crowd::Crowd;
use crate::machine::rss_bytes;
use crate::process::Watchlife;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One `watchlife` at `rate`, viewers added step by step. Returns its CPU
/// (% of a core) and frames published per second with no viewer, and the
/// viewer connections that failed.
pub async fn busy_run(
    config: &Config,
    rate: u32,
    steps: &[Step],
    figures: &mut [Figures],
) -> Result<(f64, f64, u64), String> {
    let rate_arg = rate.to_string();
    let bridge =
        Watchlife::start_demo(&config.watchlife, &rate_arg, &["--max-viewers", "1000000"])?;
    // The demo's story takes a moment to reach its pace.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let quiet = window(&bridge, WINDOW / 2).await?;

    let shared = Arc::new(Shared::new(steps.len(), decode_every(config)));
    let mut crowd = Crowd::new(CONNECTING);
    for (i, step) in steps.iter().enumerate() {
        let n = step.viewers;
        progress!("fan-out: {n} viewers");
        connect(&bridge, n, config.compress, &mut crowd, &shared).await;
        settle(&bridge, &shared).await;
        measure_step(&bridge, &shared, i, &mut figures[i]).await?;
    }
    drop(crowd);
    drop(bridge);
    Ok((
        quiet.cpu / quiet.seconds * 100.0,
        quiet.frames_published / quiet.seconds,
        shared.failures.load(Ordering::Relaxed),
    ))
}

/// Measures one step for [`WINDOW`]: the viewers' latency (recorded under
/// `i`), what they got, and the cost.
async fn measure_step(
    bridge: &Watchlife,
    shared: &Shared,
    i: usize,
    f: &mut Figures,
) -> Result<(), String> {
    let pid = bridge.pid();
    let events_before = shared.events.load(Ordering::Relaxed);
    let resyncs_before = shared.resyncs.load(Ordering::Relaxed);
    shared.recording.store(i + 1, Ordering::Relaxed);
    let measured = window(bridge, WINDOW).await?;
    shared.recording.store(0, Ordering::Relaxed);
    let seconds = measured.seconds;
    let events = (shared.events.load(Ordering::Relaxed) - events_before) as f64;
    let resyncs = (shared.resyncs.load(Ordering::Relaxed) - resyncs_before) as f64;
    let rss = rss_bytes(pid).ok_or("watchlife is gone")? as f64;
    let readers = shared.readers() as f64;
    f.reflector_p50
        .push(shared.reflector[i].quantile_or_nan(0.5));
    f.reflector_p99
        .push(shared.reflector[i].quantile_or_nan(0.99));
    f.hub_p50.push(shared.hub[i].quantile_or_nan(0.5));
    f.hub_p99.push(shared.hub[i].quantile_or_nan(0.99));
    f.informer_p50.push(shared.informer[i].quantile_or_nan(0.5));
    f.reflector.merge(&shared.reflector[i]);
    f.published_per_second
        .push(measured.events_published / seconds);
    if measured.events_published > 0.0 {
        f.delivered_share
            .push(events / readers / measured.events_published);
    }
    f.resyncs_per_viewer_minute
        .push(resyncs / readers / seconds * 60.0);
    f.cpu_percent.push(measured.cpu / seconds * 100.0);
    if measured.frames_sent > 0.0 {
        f.cpu_per_frame
            .push(measured.cpu * 1e6 / measured.frames_sent);
        f.cpu_per_message
            .push(measured.cpu * 1e6 / measured.messages_sent.max(1.0));
    }
    f.viewers_cpu_percent
        .push(measured.viewers_cpu / seconds * 100.0);
    f.rss.push(rss);
    Ok(())
}

/// Waits [`SETTLE`], then until the reading viewers take no more events than the
/// hub publishes (they have caught up with their snapshots and any backlog),
/// or [`SETTLE_MAX`] has passed.
async fn settle(bridge: &Watchlife, shared: &Shared) {
    tokio::time::sleep(SETTLE).await;
    let deadline = Instant::now() + SETTLE_MAX;
    while Instant::now() < deadline {
        let before = shared.events.load(Ordering::Relaxed);
        let Ok(w) = window(bridge, Duration::from_secs(1)).await else {
            return;
        };
        let read =
            (shared.events.load(Ordering::Relaxed) - before) as f64 / shared.readers() as f64;
        if read <= w.events_published * 1.05 + 1.0 {
            return;
        }
    }
}

/// Every how many viewers one reads its frames: all of them unless they
/// take their frames compressed.
fn decode_every(config: &Config) -> usize {
    if config.compress { DECODE_EVERY } else { 1 }
}

/// Connects viewers until there are `n` (compressed ones: as the page asks,
/// `compress`); returns when each has connected or failed.
async fn connect(
    bridge: &Watchlife,
    n: usize,
    compress: bool,
    crowd: &mut Crowd,
    shared: &Arc<Shared>,
) {
    // As the page asks: several frames to a message when they come fast.
    let url = match compress {
        true => bridge.page_ws_url(),
        false => format!("{}?batch=true", bridge.ws_url()),
    };
    crowd
        .grow_to(n, |permit| view(url.clone(), shared.clone(), permit))
        .await;
}

/// The crowd, on a demo with no workload of its own: memory per viewer as
/// viewers join (resident memory after each step, less before the first,
/// per viewer), then the crowd's latency while the bench writes a configmap
/// through the demo API at each of `rates` writes per second.
pub async fn crowd_run(
    config: &Config,
    steps: &[usize],
    rates: &[u32],
    idle: &mut [Idle],
    figures: &mut [Figures],
) -> Result<u64, String> {
    let api = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    let api_arg = api.to_string();
    let bridge = Watchlife::start(
        &config.watchlife,
        &[
            "--demo",
            "--demo-idle",
            "--demo-api",
            &api_arg,
            "--max-viewers",
            "1000000",
        ],
    )?;
    let pid = bridge.pid();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_bytes(pid).ok_or("no /proc entry for watchlife")? as f64;
    let shared = Arc::new(Shared::new(rates.len(), decode_every(config)));
    let mut crowd = Crowd::new(CONNECTING);
    for (i, &n) in steps.iter().enumerate() {
        progress!("fan-out: {n} viewers, no workload");
        let (had, t) = (crowd.size(), Instant::now());
        connect(&bridge, n, config.compress, &mut crowd, &shared).await;
        idle[i]
            .connects_per_second
            .push((n - had) as f64 / t.elapsed().as_secs_f64());
        tokio::time::sleep(SETTLE).await;
        let rss = rss_bytes(pid).ok_or("watchlife is gone")? as f64;
        idle[i].rss_per_viewer.push((rss - before) / n as f64);
    }
    let n = crowd.size();
    for (i, &rate) in rates.iter().enumerate() {
        progress!("fan-out: {n} viewers, {rate} writes/s");
        // The writer has a thread of its own: on the viewers' runtime, a
        // crowd busy reading would slow the writes it is measured against.
        let writer = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        writer.spawn(write_configmap(api, rate));
        settle(&bridge, &shared).await;
        let measured = measure_step(&bridge, &shared, i, &mut figures[i]).await;
        writer.shutdown_background();
        measured?;
        let rss = rss_bytes(pid).ok_or("watchlife is gone")? as f64;
        figures[i]
            .rss_per_busy_viewer
            .push((rss - before) / n as f64);
    }
    drop(crowd);
    Ok(shared.failures.load(Ordering::Relaxed))
}
