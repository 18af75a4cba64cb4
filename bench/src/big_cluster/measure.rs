//! One run of the big cluster: the empty bridge and its idle viewers, then
//! each size filled, the apiserver restarted, and a fresh bridge measured.

use super::fill::{create_namespaces, fill, wait_watch_cache};
use super::idle::{measure_empty, steady_rss};
use super::page::Page;
use super::viewer::{connect, count_frames, read_opening};
use super::{Config, Empty, Figures, NAMESPACES, TIMEOUT, WRITE_FOR, WRITE_RATE};
use crate::apiserver::Api;
use crate::process::{Watchlife, get, metric};
use crate::stats::{bytes, count, micros};
use crate::wire::WireViewer;
use std::time::{Duration, Instant};

/// The whole section on one cluster: the bridge over the empty cluster and
/// its idle viewers, then each of `sizes`, smallest first.
pub async fn measure_all(
    config: &Config,
    sizes: &[usize],
    viewers: &[usize],
    browser: bool,
) -> (Empty, Vec<Figures>) {
    progress!("big cluster: starting etcd and kube-apiserver");
    let mut cluster = watchlife_tests::real_cluster::RealCluster::start().await;
    let api = Api::tls(cluster.base_url(), cluster.token(), cluster.ca_cert());
    let kubeconfig = cluster.kubeconfig().display().to_string();
    let mut empty = Empty::default();
    let mut figures = Vec::new();
    empty.failure = create_namespaces(&api).await;
    progress!("big cluster: the empty bridge and idle viewers");
    if let Err(e) = measure_empty(config, &kubeconfig, viewers, &mut empty).await {
        progress!("big cluster: the empty bridge failed: {e}");
        empty.failure = Some(e);
    }
    let etcd = match etcd_client::Client::connect([cluster.etcd_endpoint()], None).await {
        Ok(c) => c,
        Err(e) => {
            empty.failure = Some(format!("cannot reach etcd: {e}"));
            return (empty, figures);
        }
    };
    let mut filled = 0;
    let mut stored = (0usize, 0usize);
    for &n in sizes {
        let mut f = Figures {
            objects: n,
            ..Figures::default()
        };
        progress!("big cluster: filling etcd up to {} configmaps", count(n));
        let t = Instant::now();
        match fill(&etcd, filled, n).await {
            Ok((written, json)) => {
                stored.0 += written;
                stored.1 += json;
            }
            Err(e) => {
                f.failure = Some(e);
                figures.push(f);
                break;
            }
        }
        f.fill_seconds = t.elapsed().as_secs_f64();
        f.stored_json = stored.1 as f64 / stored.0.max(1) as f64;
        filled = n;
        progress!(
            "big cluster: filled in {:.0} s; restarting kube-apiserver",
            f.fill_seconds
        );
        cluster.restart_apiserver().await;
        let result = async {
            let listed = wait_watch_cache(&api).await?;
            progress!(
                "big cluster: the watch cache holds {} configmaps",
                count(listed)
            );
            measure_size(config, &api, &kubeconfig, listed, browser, &mut f).await
        }
        .await;
        if let Err(e) = result {
            progress!("big cluster: {} objects failed: {e}", count(n));
            f.failure = Some(e);
        }
        figures.push(f);
    }
    (empty, figures)
}

/// The time from `start` until `bridge` has published every frame of a
/// LIST of `listed` objects; `None` when it has no such metric.
async fn all_out(
    bridge: &Watchlife,
    start: Instant,
    listed: usize,
) -> Result<Option<Duration>, String> {
    // list_started, list_finished, watch_started and one event per object.
    let want = listed as f64 + 3.0;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let published = get(bridge.addr, "/metrics")
            .await
            .map(|m| metric(&m, "watchlife_frames_published_total"));
        match published {
            Some(Some(p)) if p >= want => return Ok(Some(start.elapsed())),
            // No such metric: the time is left out.
            Some(None) => return Ok(None),
            _ if Instant::now() > deadline => {
                return Err(format!("watchlife published fewer than {want} frames"));
            }
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// A new viewer's opening (hello and snapshot): its bytes, messages and time.
async fn measure_opening(bridge: &Watchlife, f: &mut Figures) -> Result<(), String> {
    let t0 = Instant::now();
    let mut ws = connect(&bridge.ws_url()).await?;
    let (opening, messages) = read_opening(&mut ws).await?;
    f.opening_time = Some(t0.elapsed());
    f.opening_bytes = Some(opening as f64);
    f.opening_messages = messages;
    drop(ws);
    progress!(
        "big cluster: hello + snapshot {} in {} messages",
        bytes(opening as f64),
        messages
    );
    Ok(())
}

/// One size: a fresh bridge's LIST and memory, a new viewer's opening,
/// the page, then writes through the API while a viewer and the page count.
async fn measure_size(
    config: &Config,
    api: &Api,
    kubeconfig: &str,
    listed: usize,
    browser: bool,
    f: &mut Figures,
) -> Result<(), String> {
    progress!(
        "big cluster: {} objects, watchlife listing",
        count(f.objects)
    );
    let start = Instant::now();
    let bridge = Watchlife::start_on_configmaps(&config.watchlife, kubeconfig, &[])?;
    f.list_finished = Some(bridge.list_finished(start, TIMEOUT).await?);
    f.all_out = all_out(&bridge, start, listed).await?;
    f.rss = Some(steady_rss(bridge.pid()).await?);
    progress!(
        "big cluster: listed in {}, {} resident",
        micros(f.list_finished.unwrap_or_default().as_secs_f64() * 1e6),
        bytes(f.rss.unwrap_or(f64::NAN))
    );

    measure_opening(&bridge, f).await?;

    let page = if browser {
        match Page::open(&bridge, listed, f).await {
            Ok(page) => Some(page),
            Err(e) => {
                f.failure = Some(format!("the page: {e}"));
                None
            }
        }
    } else {
        None
    };

    progress!(
        "big cluster: {WRITE_RATE} writes/s for {} s",
        WRITE_FOR.as_secs()
    );
    let mut ws = connect(&bridge.ws_url()).await?;
    read_opening(&mut ws).await?;
    let plain = format!("{}?batch=true", bridge.ws_url());
    let plain = WireViewer::join(&plain).await?;
    let compressed = bridge.page_ws_url();
    let compressed = WireViewer::join(&compressed).await?;
    let counting = async {
        match &page {
            Some(page) => page.fps(WRITE_FOR).await.ok(),
            None => None,
        }
    };
    let ((written, seconds), received, page_fps, plain, compressed) = tokio::join!(
        write(api, f.objects),
        count_frames(&mut ws, WRITE_FOR),
        counting,
        plain.count(WRITE_FOR),
        compressed.count(WRITE_FOR)
    );
    f.wire = Some((plain?.per_frame(), compressed?.per_frame()));
    f.writes_per_second = Some(written as f64 / seconds);
    f.frames_per_second = Some(received.frames as f64 / WRITE_FOR.as_secs_f64());
    f.events_per_second = Some(received.events as f64 / WRITE_FOR.as_secs_f64());
    f.events_seen = Some(received.events_drained as f64 / written.max(1) as f64);
    f.resyncs = received.resyncs;
    f.page_fps = page_fps;
    if let Some(page) = page {
        page.close().await;
    }
    Ok(())
}

/// Patches configmaps through the API at [`WRITE_RATE`] for [`WRITE_FOR`];
/// returns the writes that succeeded and the seconds they took.
async fn write(api: &Api, objects: usize) -> (usize, f64) {
    let t0 = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(WRITE_RATE)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut written = 0;
    let mut k = 0usize;
    while t0.elapsed() < WRITE_FOR {
        ticks.tick().await;
        let i = k.wrapping_mul(7919) % objects.max(1);
        k += 1;
        let path = format!(
            "/api/v1/namespaces/big-{}/configmaps/settings-{i:07}",
            i % NAMESPACES
        );
        // Never a value an earlier size wrote: an update that changes
        // nothing makes no event.
        let body = format!(r#"{{"data":{{"mode":"write-{objects}-{k}"}}}}"#);
        if let Ok((200, _)) = api
            .request_typed("PATCH", &path, "application/merge-patch+json", body)
            .await
        {
            written += 1;
        }
    }
    (written, t0.elapsed().as_secs_f64())
}
