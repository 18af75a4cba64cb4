//! What a run holds (the cluster, the proxies, the bridges and their
//! viewers' load balancer, the viewers and the writer's account), how it is
//! set up, and how the viewers are waited for until they agree with the
//! apiserver.

use super::cluster::{Cluster, Kind, Kubernetes};
use super::credentials::Credentials;
use super::proxy::{self, Mode, Proxy};
use super::replica::Replica;
use super::round::Timeline;
use super::viewers::{Follower, Style};
use super::writer::{self, Written};
use super::{Config, NAMESPACES, invariants, model, queued_deletion};
use crate::service::Service;
use crate::tls_proxy::{TlsFiles, TlsProxy};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::time::Instant;
use watchlife_testkit::client::Client;

/// How long the viewers may take to hold what the apiserver lists once the
/// writes pause: the bridge may be in a backoff of up to 30–60 s after an
/// apiserver that stayed away through several relists.
pub const SETTLE: Duration = Duration::from_secs(90);

/// How long the proxy resets connections to make a v1.20 bridge relist:
/// its watch is reset and watched again at once, that WATCH is reset too,
/// and client-go v1.20 relists after any WATCH failure but a refused
/// connection; the LIST comes after the 0.8 s backoff, once the proxy
/// passes again.
const FORCE_RELIST_RESET: Duration = Duration::from_millis(500);

/// Polls of the viewers in a row that must see the same phantoms of
/// [`queued_deletion`]'s case, and no frame arrive, before the round takes
/// them as kept (nothing else in flight could remove them).
const QUIET_POLLS: u32 = 5;

/// Everything a run holds.
pub(super) struct Rig {
    pub(super) cluster: Cluster,
    pub(super) kinds: &'static [Kind],
    pub(super) kubernetes: Kubernetes,
    pub(super) client: Client,
    pub(super) proxy: Proxy,
    /// Between [`Rig::proxy`] and the apiserver: TLS ends there.
    pub(super) tls_proxy: TlsProxy,
    /// The bridge's token file and what accepts it.
    pub(super) credentials: Credentials,
    /// The bridges, the first one's process the one whose memory is
    /// followed.
    pub(super) replicas: Vec<Replica>,
    /// The viewers' load balancer in front of the bridges: each new
    /// connection goes to the next ready one. Held for the run (dropping
    /// it stops it).
    _balancer: Service,
    pub(super) bridge_args: Vec<String>,
    pub(super) bridge_env: Vec<(String, String)>,
    pub(super) followers: Vec<Follower>,
    pub(super) written: Option<Written>,
    /// How long the viewers may take to agree ([`SETTLE`] unless told).
    pub(super) settle: Duration,
}

impl Rig {
    /// LISTs each bridge's process has made.
    pub(super) async fn lists(&self) -> Result<Vec<u64>, String> {
        let mut lists = Vec::new();
        for replica in &self.replicas {
            lists.push(replica.lists().await?);
        }
        Ok(lists)
    }

    /// Streaming lists each bridge started, as its pinned full-speed
    /// viewer saw them reported: v1.36's list-watch cycles begin with one
    /// instead of a LIST, and no metric counts them. That viewer reads
    /// every frame (a bridge restart aside, whose own start the LIST bound
    /// allows for).
    pub(super) fn streaming_lists(&self) -> Vec<u64> {
        self.pinned(|m| m.streaming_lists)
    }

    /// `read` of each bridge's pinned viewer's model.
    pub(super) fn pinned<T>(&self, read: impl Fn(&model::Model) -> T) -> Vec<T> {
        self.replicas
            .iter()
            .map(|r| self.followers[r.pinned].state(&read))
            .collect()
    }

    /// Waits until every viewer holds exactly what the apiserver lists, and
    /// returns that list; or says how they differ at the deadline. With
    /// `keep_queued` (v1.20's rules), phantoms of [`queued_deletion`]'s case
    /// are let through once they stay put and no frame moves for
    /// [`QUIET_POLLS`] polls; they are returned, to be checked by the next
    /// relist.
    pub(super) async fn settle(&self, keep_queued: bool) -> Result<Settled, String> {
        let deadline = Instant::now() + self.settle;
        let mut quiet: Option<(BTreeSet<String>, u64, u32)> = None;
        loop {
            let truth = writer::listed(&self.client, self.kinds).await;
            let mut report = String::new();
            for viewer in &self.followers {
                viewer.check_alive();
                let (diff, phantoms) = viewer.state(|m| {
                    (
                        model::differences(&truth, &m.objects),
                        queued_deletion::describe_phantoms(&truth, m),
                    )
                });
                if !diff.is_empty() || !viewer.connected() {
                    report.push_str(&format!(
                        "\n  {} ({}): {diff}{phantoms}",
                        viewer.name,
                        if viewer.connected() {
                            "connected"
                        } else {
                            "not connected"
                        }
                    ));
                }
            }
            if report.is_empty() {
                return Ok(Settled {
                    truth,
                    kept: BTreeSet::new(),
                });
            }
            if keep_queued && let Some(kept) = self.only_queued_phantoms(&truth) {
                let frames: u64 = self
                    .followers
                    .iter()
                    .map(|f| f.state(|m| m.stream_frames))
                    .sum();
                let polls = match &quiet {
                    Some((same, at, polls)) if *same == kept && *at == frames => polls + 1,
                    _ => 1,
                };
                if polls >= QUIET_POLLS {
                    return Ok(Settled { truth, kept });
                }
                quiet = Some((kept, frames, polls));
            } else {
                quiet = None;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the viewers do not hold what the apiserver lists ({} objects) {:?} after the writes paused:{report}",
                    truth.len(),
                    self.settle
                ));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The phantoms when every viewer is connected and differs from `truth`
    /// by phantoms of [`queued_deletion`]'s case alone.
    fn only_queued_phantoms(&self, truth: &BTreeMap<String, String>) -> Option<BTreeSet<String>> {
        let models: Vec<_> = self
            .followers
            .iter()
            .map(|f| f.model.lock().unwrap())
            .collect();
        for (viewer, m) in self.followers.iter().zip(&models) {
            let (lost, _, stale) = model::counts(truth, &m.objects);
            if !viewer.connected() || !lost.is_empty() || !stale.is_empty() {
                return None;
            }
        }
        let (explained, others) =
            queued_deletion::sort_phantoms(truth, models.iter().map(|m| &**m));
        others.is_empty().then_some(explained)
    }
}

impl Rig {
    /// [`queued_deletion`]'s promise: the next relist drops what `kept`
    /// names. Makes the bridge relist (the proxy resets connections for
    /// [`FORCE_RELIST_RESET`]) and requires every viewer to hold exactly
    /// the apiserver's list afterwards, and the bridge to have listed.
    pub(super) async fn relist_drops(
        &self,
        kept: &BTreeSet<String>,
        tl: &mut Timeline,
    ) -> Result<(), String> {
        let lists = self.lists().await?;
        tl.note(format!(
            "proxy resets connections for {FORCE_RELIST_RESET:?}: the bridges must relist"
        ));
        self.proxy.misbehave(Mode::Reset, FORCE_RELIST_RESET).await;
        let settled = self.settle(false).await.map_err(|message| {
            format!("{kept:?} were kept after a deletion while only queued, and the next relist did not drop them: {message}")
        })?;
        let now = self.lists().await?;
        if now.iter().zip(&lists).any(|(now, before)| now == before) {
            return Err(format!(
                "{kept:?}, kept after a deletion while only queued, went without a relist of every bridge (LISTs before {lists:?}, after {now:?})"
            ));
        }
        let relists: u64 = now.iter().sum::<u64>() - lists.iter().sum::<u64>();
        tl.note(format!(
            "after {relists} LISTs every viewer holds the {} objects listed: {kept:?} dropped",
            settled.truth.len()
        ));
        Ok(())
    }
}

impl Rig {
    /// Waits up to `bound` until each bridge's pinned viewer has been told
    /// of as many watches taken for dead since it had been told of `before`
    /// as that bridge had `out` (one count per bridge: its WATCHes out when
    /// the silence began; a Reflector between a failure and its next try
    /// had none to lose); how long that took, or `None`.
    pub(super) async fn dead_watches_after(
        &self,
        before: &[u64],
        out: &[u64],
        bound: Duration,
    ) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < bound {
            let now = self.pinned(|m| m.watches_taken_for_dead);
            if now
                .iter()
                .zip(before.iter().zip(out))
                .all(|(now, (before, out))| *now >= before + out)
            {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }
}

/// What the viewers agree on once settled.
pub(super) struct Settled {
    /// The apiserver's list: key → resourceVersion.
    pub(super) truth: BTreeMap<String, String>,
    /// Phantoms of [`queued_deletion`]'s case the viewers keep (v1.20 only).
    pub(super) kept: BTreeSet<String>,
}

pub(super) async fn setup(config: &Config) -> Rig {
    let cluster = Cluster::start(config.kubernetes, &NAMESPACES).await;
    let kinds = config.kubernetes.kinds();
    let client = cluster.client();
    let mut written = Written::new(kinds, &NAMESPACES, config.seed);
    for _ in 0..20 {
        written.step(&client).await.expect("the first writes");
    }
    let upstream: SocketAddr = cluster
        .base_url()
        .trim_start_matches("https://")
        .parse()
        .expect("the apiserver's address");
    let tls_files = TlsFiles::in_folder(&cluster.dir().join("pki"));
    let credentials = Credentials::set_up(&cluster, &client, kinds).await;
    let tls_proxy = TlsProxy::start(upstream, &tls_files, Some(credentials.gate())).await;
    let proxy = Proxy::start(tls_proxy.addr).await;
    let kubeconfig = cluster.dir().join("kubeconfig-through-proxy");
    proxy::kubeconfig_through(
        cluster.kubeconfig(),
        &kubeconfig,
        cluster.base_url(),
        proxy.addr,
    );
    credentials.use_in(&kubeconfig);
    // Each release's rules against its own release's apiserver: 1.36
    // streams its lists from the v0.36 watch cache, 1.20 lists then watches.
    let mut bridge_args = vec![
        "--kubernetes".to_string(),
        config.kubernetes.flag().to_string(),
        "--kubeconfig".to_string(),
        kubeconfig.to_str().unwrap().to_string(),
        "--resources".to_string(),
        kinds
            .iter()
            .map(|k| k.resource)
            .collect::<Vec<_>>()
            .join(","),
        "--dead-watch-after".to_string(),
        invariants::DEAD_WATCH_AFTER.as_secs().to_string(),
    ];
    if let Some(cap) = config.backoff_cap {
        bridge_args.extend(["--backoff-cap".to_string(), cap.as_secs().to_string()]);
    }
    assert!(
        (1..=2).contains(&config.replicas),
        "a full-speed viewer is pinned to each of one or two bridges"
    );
    let balancer = Service::start_round_robin().await;
    let mut replicas = Vec::new();
    for number in 1..=config.replicas {
        let log = crate::artifacts().join(format!(
            "chaos-{}-{}-{}-watchlife{}.log",
            config.label,
            config.kubernetes.flag(),
            config.seed,
            if number == 1 {
                String::new()
            } else {
                format!("-{number}")
            }
        ));
        let _ = std::fs::remove_file(&log);
        let addr: SocketAddr = format!("127.0.0.1:{}", crate::free_port()).parse().unwrap();
        let bridge = Replica::start(addr, &bridge_args, &config.bridge_env, &log).await;
        balancer.add(addr);
        replicas.push(Replica {
            bridge,
            log,
            pinned: number - 1,
        });
    }
    // One full-speed viewer on each bridge; the others through the load
    // balancer, so that each of their connections may land on either.
    let mut followers = Vec::new();
    let styles = [
        (
            "full-speed-1",
            Style::FullSpeed,
            replicas[0].bridge.ws_url(),
        ),
        (
            "full-speed-2",
            Style::FullSpeed,
            replicas[1 % replicas.len()].bridge.ws_url(),
        ),
        ("resuming-1", Style::Resuming, balancer.ws_url()),
        ("resuming-2", Style::Resuming, balancer.ws_url()),
        ("stalling", Style::Stallable, balancer.ws_url()),
    ];
    for (i, (name, style, url)) in styles.into_iter().enumerate() {
        followers.push(Follower::start(
            name.to_string(),
            style,
            url,
            config.seed ^ (0x5151 * (i as u64 + 1)),
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !followers.iter().all(|f| f.state(|m| m.snapshots > 0)) {
        assert!(
            Instant::now() < deadline,
            "the viewers got no snapshot within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Rig {
        cluster,
        kinds,
        kubernetes: config.kubernetes,
        client,
        proxy,
        tls_proxy,
        credentials,
        replicas,
        _balancer: balancer,
        bridge_args,
        bridge_env: config.bridge_env.clone(),
        followers,
        written: Some(written),
        settle: config.settle,
    }
}
