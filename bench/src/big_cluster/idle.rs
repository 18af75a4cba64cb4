//! Idle viewers of the bridge over the empty cluster, and what each costs
//! it in resident memory.

use super::viewer::connect;
use super::{CONNECTING, Config, Empty, TIMEOUT};
use crate::crowd::Crowd;
use crate::machine::rss_bytes;
use crate::process::Watchlife;
use crate::stats::count;
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;

/// The bridge over the empty cluster: its `VmRSS`, then idle viewers.
pub async fn measure_empty(
    config: &Config,
    kubeconfig: &str,
    viewers: &[usize],
    empty: &mut Empty,
) -> Result<(), String> {
    let start = Instant::now();
    let bridge = Watchlife::start_on_configmaps(
        &config.watchlife,
        kubeconfig,
        &["--max-viewers", "1000000"],
    )?;
    bridge.list_finished(start, TIMEOUT).await?;
    let before = steady_rss(bridge.pid()).await?;
    empty.rss = Some(before);
    let failures = Arc::new(AtomicU64::new(0));
    let mut crowd = Crowd::new(CONNECTING);
    let url = bridge.ws_url();
    for &n in viewers {
        progress!("big cluster: {} idle viewers", count(n));
        crowd
            .grow_to(n, |permit| {
                idle_viewer(url.clone(), failures.clone(), permit)
            })
            .await;
        let lost = failures.load(Ordering::Relaxed);
        if lost > 0 {
            return Err(format!("{lost} idle viewers could not connect"));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss = steady_rss(bridge.pid()).await?;
        empty.idle.push((n, (rss - before) / n as f64));
    }
    Ok(())
}

/// An idle viewer: connects, then reads what comes (the opening,
/// heartbeats) and answers pings, as an idle page does.
async fn idle_viewer(url: String, failures: Arc<AtomicU64>, permit: OwnedSemaphorePermit) {
    let socket = connect(&url).await;
    drop(permit);
    let Ok(mut ws) = socket else {
        failures.fetch_add(1, Ordering::Relaxed);
        return;
    };
    while let Some(Ok(_)) = ws.next().await {}
}

/// `VmRSS` of `pid` once two readings a second apart differ by under 1%
/// (the LIST's buffers freed), or after ten seconds.
pub async fn steady_rss(pid: u32) -> Result<f64, String> {
    let read = || rss_bytes(pid).map(|b| b as f64).ok_or("watchlife is gone");
    let mut last = read()?;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = read()?;
        if (now - last).abs() < last * 0.01 {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}
