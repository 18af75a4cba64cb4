//! One round: writes, the planned fault, the pause, and the invariants.

use super::cluster::Kubernetes;
use super::faults::{Fault, Planned};
use super::invariants::{self, Invariant};
use super::proxy::Mode;
use super::replica::Replica;
use super::rig::{Rig, Settled};
use super::viewers::Style;
use super::writer::{self, Writing};
use super::{NAMESPACES, report};
use crate::tls_proxy::Answer;
use std::time::Duration;
use tokio::time::Instant;

/// Time between two writes: some 30 writes a second on a small machine.
const WRITE_PAUSE: Duration = Duration::from_millis(20);
/// Writes go on this long after a fault ends, before they pause.
const TAIL: Duration = Duration::from_millis(1500);

/// How long a SIGTERMed apiserver may drain before it is SIGKILLed: a
/// pod's default `terminationGracePeriodSeconds`.
const APISERVER_GRACE: Duration = Duration::from_secs(30);

pub(super) type RoundError = (Invariant, String, String);

/// What happened in a round, when.
pub(super) struct Timeline {
    pub(super) t0: Instant,
    entries: Vec<(Duration, String)>,
}

impl Timeline {
    pub(super) fn note(&mut self, what: String) {
        self.entries.push((self.t0.elapsed(), what));
    }

    pub(super) fn text(&self) -> String {
        self.entries
            .iter()
            .map(|(t, what)| format!("  +{:>7.3}s {what}", t.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub(super) async fn one_round(
    rig: &mut Rig,
    number: usize,
    planned: &Planned,
) -> Result<report::Round, RoundError> {
    let t0 = Instant::now();
    let mut tl = Timeline {
        t0,
        entries: Vec::new(),
    };
    let log_offsets: Vec<u64> = rig.replicas.iter().map(Replica::log_len).collect();
    let mut lists_before = rig
        .lists()
        .await
        .map_err(|e| (Invariant::Logs, e, String::new()))?;
    let mut lists_carried = vec![0; rig.replicas.len()];
    let streaming_before = rig.streaming_lists();
    let resyncs_before: u64 = rig
        .followers
        .iter()
        .map(|f| f.state(|m| u64::from(m.resyncs)))
        .sum();
    let told_before = rig.pinned(|m| m.failures_total);
    let refused_before = rig.credentials.refusals();
    let written = rig.written.take().expect("the writer's account");
    let (made, changed, deleted, failed) = (
        written.made,
        written.changed,
        written.deleted,
        written.failed,
    );
    tl.note("writes begin".into());
    let writing = Writing::start(rig.client.clone(), written, WRITE_PAUSE, false);
    tokio::time::sleep(planned.at).await;
    let fault = planned.fault;
    tl.note(format!("{fault} begins"));
    match fault {
        Fault::ApiserverKill => {
            rig.cluster.kill_apiserver();
            tl.note("apiserver SIGKILLed".into());
            tokio::time::sleep(planned.length).await;
            tl.note("apiserver starting".into());
            rig.cluster.start_apiserver().await;
            tl.note("apiserver ready".into());
        }
        Fault::ApiserverGraceful => {
            tl.note("apiserver sent SIGTERM".into());
            let exited = rig
                .cluster
                .restart_apiserver_gracefully(APISERVER_GRACE)
                .await;
            tl.note(if exited {
                "apiserver exited, started again and ready".into()
            } else {
                format!(
                    "apiserver still draining after {APISERVER_GRACE:?}: SIGKILLed, started again and ready"
                )
            });
        }
        Fault::EtcdCompaction => {
            let revision = rig.cluster.compact_etcd().await;
            tl.note(format!("etcd compacted at revision {revision}"));
        }
        Fault::EtcdKill => {
            rig.cluster.kill_etcd();
            tl.note("etcd SIGKILLed; the apiserver stays up".into());
            tokio::time::sleep(planned.length).await;
            tl.note("etcd starting".into());
            rig.cluster.start_etcd().await;
            tl.note("etcd healthy".into());
        }
        Fault::EtcdUnreachable => {
            let proxy = rig
                .cluster
                .etcd_proxy()
                .expect("the chaos cluster's apiserver reaches etcd through a proxy");
            let (mode, how) = match planned.pick % 2 {
                0 => (Mode::Stall, "partitioned from"),
                _ => (Mode::Drop, "refused to"),
            };
            tl.note(format!(
                "etcd {how} the apiserver for {:.1} s; both run",
                planned.length.as_secs_f64()
            ));
            proxy.misbehave(mode, planned.length).await;
            tl.note("etcd reachable again".into());
        }
        Fault::EtcdDirect => {
            // The first kind's objects, under its own etcd key layout.
            let kind = rig.kinds[0];
            let listed = writer::listed(&rig.client, &[kind]).await;
            let ours: Vec<&String> = listed
                .keys()
                .filter(|k| NAMESPACES.iter().any(|ns| k.contains(&format!("/{ns}/"))))
                .collect();
            rig.cluster.kill_apiserver();
            tl.note("apiserver SIGKILLed".into());
            let namespace = NAMESPACES[(planned.pick % NAMESPACES.len() as u64) as usize];
            let name = format!("etcd-{number}");
            let mut body = serde_json::json!({
                "kind": kind.kind, "apiVersion": kind.api_version,
                "metadata": {
                    "name": name, "namespace": namespace,
                    "uid": format!("00000000-0000-4000-8000-{:012}", number),
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
            });
            if kind.kind == "ConfigMap" {
                body["data"] = serde_json::json!({"written": "straight into etcd"});
            } else {
                body["spec"] = serde_json::json!({"written": "straight into etcd"});
            }
            let key = kind.etcd_key(namespace, &name);
            rig.cluster.etcdctl(&["put", &key, &body.to_string()]).await;
            tl.note(format!("etcdctl put {key}"));
            if !ours.is_empty() {
                let victim = ours[(planned.pick >> 8) as usize % ours.len()];
                let (_, rest) = victim.split_once('/').unwrap();
                let (namespace, name) = rest.split_once('/').unwrap();
                let key = kind.etcd_key(namespace, name);
                let out = rig.cluster.etcdctl(&["del", &key]).await;
                tl.note(format!("etcdctl del {key}: {}", out.trim()));
            }
            tokio::time::sleep(planned.length).await;
            tl.note("apiserver starting".into());
            rig.cluster.start_apiserver().await;
            tl.note("apiserver ready".into());
        }
        Fault::ProxyStall | Fault::ProxyDrop | Fault::ProxyReset => {
            let mode = match fault {
                Fault::ProxyStall => Mode::Stall,
                Fault::ProxyDrop => Mode::Drop,
                _ => Mode::Reset,
            };
            tl.note(format!(
                "proxy {mode:?} for {:.1} s",
                planned.length.as_secs_f64()
            ));
            rig.proxy.misbehave(mode, planned.length).await;
            tl.note("proxy passes again".into());
        }
        Fault::SilentWatch => {
            let dead_before = rig.pinned(|m| m.watches_taken_for_dead);
            let out = rig.pinned(|m| m.watches_out());
            rig.proxy.silence();
            tl.note(format!(
                "the connections open through the proxy go silent for good; WATCHes out, bridge by bridge: {out:?}"
            ));
            let bound = invariants::DEAD_WATCH_AFTER + invariants::DEAD_WATCH_MARGIN;
            let noticed = rig.dead_watches_after(&dead_before, &out, bound).await;
            rig.proxy.misbehave(Mode::Pass, Duration::ZERO).await;
            match noticed {
                Some(after) => tl.note(format!(
                    "every watch taken for dead {:.1} s after the silence began",
                    after.as_secs_f64()
                )),
                None => {
                    let _ = writing.stop().await;
                    return Err((
                        Invariant::DeadWatch,
                        format!(
                            "not every WATCH out when the silence began ({out:?}, bridge by bridge, of {} resources each) was taken for dead within {bound:?}",
                            rig.kinds.len()
                        ),
                        tl.text(),
                    ));
                }
            }
        }
        Fault::TlsStatus | Fault::TlsTruncated => {
            let answer = match (fault, planned.pick % 3) {
                (Fault::TlsTruncated, _) => Answer::Truncate,
                (_, 0) => Answer::Status(429),
                (_, 1) => Answer::Status(500),
                _ => Answer::Status(503),
            };
            tl.note(format!(
                "TLS proxy answers {answer:?} for {:.1} s",
                planned.length.as_secs_f64()
            ));
            rig.tls_proxy.misbehave(answer, planned.length).await;
            tl.note("TLS proxy relays again".into());
        }
        Fault::TokenRotated => {
            let old = rig.credentials.renew();
            if planned.pick.is_multiple_of(2) {
                tl.note("token file renewed; the token sent has expired".into());
            } else {
                tl.note(format!(
                    "token file renewed; the token sent stays valid for {:.1} s",
                    planned.length.as_secs_f64()
                ));
                tokio::time::sleep(planned.length).await;
                tl.note("the old token expires".into());
            }
            rig.credentials.expire(&old);
            rig.tls_proxy.close_connections();
        }
        Fault::RbacRevoked => {
            rig.credentials.revoke(&rig.client).await;
            rig.tls_proxy.close_connections();
            tl.note(format!(
                "the bridge's ClusterRoleBinding removed for {:.1} s; connections closed",
                planned.length.as_secs_f64()
            ));
            tokio::time::sleep(planned.length).await;
            rig.credentials.grant(&rig.client).await;
            tl.note("the binding created again".into());
        }
        Fault::BridgeTerm | Fault::BridgeKill => {
            // The last bridge takes every restart: the first runs as one
            // process from the first round to the last, so that its memory
            // can be compared across the run (its viewers still see the
            // other go, through the load balancer).
            let which = rig.replicas.len() - 1;
            let lists_now = rig
                .lists()
                .await
                .map_err(|e| (Invariant::Logs, e, tl.text()))?;
            lists_carried[which] = lists_now[which] - lists_before[which];
            lists_before[which] = 0;
            tl.note(format!("bridge {} of {}", which + 1, rig.replicas.len()));
            let replica = &mut rig.replicas[which];
            if fault == Fault::BridgeTerm {
                let status = replica.bridge.terminate();
                tl.note(format!("bridge stopped with SIGTERM: {status}"));
                if !status.success() {
                    let _ = writing.stop().await;
                    return Err((
                        Invariant::Logs,
                        format!("the bridge exited with {status} on SIGTERM"),
                        tl.text(),
                    ));
                }
            } else {
                replica.bridge.kill();
                tl.note("bridge SIGKILLed".into());
            }
            tokio::time::sleep(planned.length).await;
            let addr = replica.bridge.addr;
            replica.bridge =
                Replica::start(addr, &rig.bridge_args, &rig.bridge_env, &replica.log).await;
            tl.note(format!("bridge serving again on {addr}"));
        }
        Fault::ViewerStall => {
            let stalled = rig
                .followers
                .iter()
                .find(|f| f.style == Style::Stallable)
                .expect("a viewer that can stall");
            stalled.pause(planned.length);
            tl.note(format!(
                "viewer {} stops reading for {:.1} s",
                stalled.name,
                planned.length.as_secs_f64()
            ));
            tokio::time::sleep(planned.length).await;
            tl.note(format!("viewer {} reads again", stalled.name));
        }
    }
    tokio::time::sleep(TAIL).await;
    let written = writing.stop().await;
    tl.note("writes paused".into());
    let refused = rig.credentials.refusals() - refused_before;
    if refused > 0 {
        tl.note(format!(
            "{refused} request(s) answered 401 by the gate so far"
        ));
    }
    let writes = (written.made - made) + (written.changed - changed) + (written.deleted - deleted);
    let failed_writes = written.failed - failed;
    rig.written = Some(written);

    // (a) objects.
    let Settled { truth, kept } = match rig.settle(rig.kubernetes == Kubernetes::V1_20).await {
        Ok(settled) => settled,
        Err(message) => {
            tl.note("not settled".into());
            // A frame missing from the stream explains objects a viewer
            // lacks or keeps: the stream's break is the one to name.
            let (broken, _) = stream_violations(rig);
            if !broken.is_empty() {
                return Err((
                    Invariant::Stream,
                    format!("{}\n  and so: {message}", broken.trim_start()),
                    tl.text(),
                ));
            }
            return Err((Invariant::Objects, message, tl.text()));
        }
    };
    tl.note(format!(
        "settled: every viewer holds the {} objects listed{}",
        truth.len(),
        if kept.is_empty() {
            String::new()
        } else {
            format!(
                ", and keeps {kept:?}, deleted while their ADDED was only queued through a relist"
            )
        }
    ));
    // (b) stream.
    let (broken, duplicated) = stream_violations(rig);
    if !broken.is_empty() {
        return Err((
            Invariant::Stream,
            broken.trim_start().to_string(),
            tl.text(),
        ));
    }
    // (c) LISTs, each bridge's own.
    let elapsed = t0.elapsed();
    let lists_now = rig
        .lists()
        .await
        .map_err(|e| (Invariant::Logs, e, tl.text()))?;
    let streaming_now = rig.streaming_lists();
    let (list_bound, list_rule) = invariants::list_bound(fault, elapsed, rig.kinds.len());
    let mut lists = 0;
    for i in 0..rig.replicas.len() {
        let made = lists_now[i] - lists_before[i]
            + lists_carried[i]
            + (streaming_now[i] - streaming_before[i]);
        if made > list_bound {
            return Err((
                Invariant::Lists,
                format!(
                    "bridge {}: {made} LISTs in a round of {fault}; the bound is {list_rule}",
                    i + 1
                ),
                tl.text(),
            ));
        }
        lists += made;
    }
    // (e) logs.
    for (i, replica) in rig.replicas.iter().enumerate() {
        let bad = invariants::bad_log_lines(&replica.log_since(log_offsets[i]), fault);
        if !bad.is_empty() {
            return Err((
                Invariant::Logs,
                format!("bridge {}'s stderr has:\n    {}", i + 1, bad.join("\n    ")),
                tl.text(),
            ));
        }
    }
    // (f) told, by either bridge.
    let told: Vec<String> = rig
        .replicas
        .iter()
        .zip(&told_before)
        .flat_map(|(r, before)| {
            rig.followers[r.pinned].state(|m| m.failures_since(*before).to_vec())
        })
        .collect();
    let refused = rig.credentials.refusals() - refused_before;
    if !fault.restarts_bridge() {
        invariants::credential_failures_told(fault, refused, &told)
            .map_err(|e| (Invariant::Told, e, tl.text()))?;
    }
    if !kept.is_empty() {
        rig.relist_drops(&kept, &mut tl)
            .await
            .map_err(|e| (Invariant::Objects, e, tl.text()))?;
    }
    let resyncs: u64 = rig
        .followers
        .iter()
        .map(|f| f.state(|m| u64::from(m.resyncs)))
        .sum::<u64>()
        - resyncs_before;
    Ok(report::Round {
        number,
        fault,
        timeline: tl.entries,
        elapsed,
        lists,
        list_bound: list_bound * rig.replicas.len() as u64,
        list_rule: format!("{list_rule}, for each of {} bridges", rig.replicas.len()),
        objects_compared: truth.len() as u64 * rig.followers.len() as u64,
        lost: 0,
        phantom: 0,
        kept_queued: kept.len() as u64,
        longest_fifo_wait: rig
            .followers
            .iter()
            .map(|f| f.state(|m| m.longest_fifo_wait))
            .max()
            .unwrap_or(0),
        duplicated,
        resyncs,
        writes,
        failed_writes,
        rss_kib: invariants::rss_kib(rig.replicas[0].bridge.pid()).unwrap_or(0),
        bridge_pid: rig.replicas[0].bridge.pid(),
    })
}

/// What the viewers recorded against the stream invariant (up to three
/// lines each), and how many events came twice.
fn stream_violations(rig: &Rig) -> (String, u64) {
    let mut broken = String::new();
    let mut duplicated = 0;
    for viewer in &rig.followers {
        let violations = viewer.state(|m| m.violations.clone());
        duplicated += violations.iter().filter(|v| v.contains("twice")).count() as u64;
        for v in violations.iter().take(3) {
            broken.push_str(&format!("\n  {}: {v}", viewer.name));
        }
    }
    (broken, duplicated)
}
