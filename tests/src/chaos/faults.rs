//! The faults a round injects, and the plan of a run: which fault each round
//! gets, when, and for how long, all drawn from the run's seed, so that the
//! same seed replays the same plan.

use super::cluster::Kubernetes;
use std::fmt;
use std::time::Duration;

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// kube-apiserver SIGKILLed, then started again.
    ApiserverKill,
    /// kube-apiserver stopped with SIGTERM (a graceful shutdown), then started again.
    ApiserverGraceful,
    /// etcd compacted at its current revision.
    EtcdCompaction,
    /// etcd SIGKILLed, then started again over its data; the apiserver
    /// stays up throughout.
    EtcdKill,
    /// etcd cut off from the apiserver by the proxy between them, both
    /// running: a partition (bytes stop, connections stay open) or etcd
    /// refusing (connections closed, new ones at once), by the round's pick.
    EtcdUnreachable,
    /// kube-apiserver stopped; ConfigMaps put and deleted straight in etcd;
    /// kube-apiserver started again.
    EtcdDirect,
    /// The proxy between the bridge and the apiserver stops passing bytes.
    ProxyStall,
    /// The proxy closes every connection, and each new one at once.
    ProxyDrop,
    /// The proxy resets every connection, and each new one at once.
    ProxyReset,
    /// The connections open through the proxy say nothing ever again, as
    /// one a NAT or a load balancer forgot; new ones pass.
    SilentWatch,
    /// The TLS-terminating proxy in front of the apiserver answers every
    /// request with 429 (and `Retry-After`), 500 or 503, by the round's pick.
    TlsStatus,
    /// The TLS-terminating proxy cuts every response short, a few bytes into
    /// its body, with no close_notify.
    TlsTruncated,
    /// The bridge's token file renewed and the token it sends refused:
    /// at once (it expired before the bridge read its successor) or after
    /// an overlap (rotated), by the round's pick; open connections close,
    /// as a watch does at its timeout.
    TokenRotated,
    /// The ClusterRoleBinding that lets the bridge read removed, open
    /// connections closed, and the binding created again later (v1.20: the
    /// v0.36 apiextensions-apiserver has no RBAC).
    RbacRevoked,
    /// The bridge stopped with SIGTERM and started again on its address.
    BridgeTerm,
    /// The bridge SIGKILLed and started again on its address.
    BridgeKill,
    /// One viewer stops reading for a while.
    ViewerStall,
}

impl Fault {
    pub const ALL: [Fault; 17] = [
        Fault::ApiserverKill,
        Fault::ApiserverGraceful,
        Fault::EtcdCompaction,
        Fault::EtcdKill,
        Fault::EtcdUnreachable,
        Fault::EtcdDirect,
        Fault::ProxyStall,
        Fault::ProxyDrop,
        Fault::ProxyReset,
        Fault::SilentWatch,
        Fault::TlsStatus,
        Fault::TlsTruncated,
        Fault::TokenRotated,
        Fault::RbacRevoked,
        Fault::BridgeTerm,
        Fault::BridgeKill,
        Fault::ViewerStall,
    ];

    /// The faults a run against `kubernetes`'s cluster can inject.
    pub fn of(kubernetes: Kubernetes) -> Vec<Fault> {
        Fault::ALL
            .into_iter()
            .filter(|f| *f != Fault::RbacRevoked || kubernetes == Kubernetes::V1_20)
            .collect()
    }

    /// The faults of `make test`'s short form: all of [`Fault::of`] but
    /// [`Fault::SilentWatch`], whose round lasts a dead-watch bound (45 s)
    /// and a relist; `tests/tests/dead_watch.rs` covers it there, against
    /// the demo's API with a 10 s bound.
    pub fn short_form(kubernetes: Kubernetes) -> Vec<Fault> {
        Fault::of(kubernetes)
            .into_iter()
            .filter(|f| *f != Fault::SilentWatch)
            .collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            Fault::ApiserverKill => "apiserver-sigkill",
            Fault::ApiserverGraceful => "apiserver-sigterm",
            Fault::EtcdCompaction => "etcd-compaction",
            Fault::EtcdKill => "etcd-sigkill",
            Fault::EtcdUnreachable => "etcd-unreachable",
            Fault::EtcdDirect => "etcd-direct-writes",
            Fault::ProxyStall => "proxy-stall",
            Fault::ProxyDrop => "proxy-drop",
            Fault::ProxyReset => "proxy-reset",
            Fault::SilentWatch => "silent-watch",
            Fault::TlsStatus => "tls-proxy-status",
            Fault::TlsTruncated => "tls-proxy-truncated",
            Fault::TokenRotated => "token-rotated",
            Fault::RbacRevoked => "rbac-revoked",
            Fault::BridgeTerm => "bridge-sigterm",
            Fault::BridgeKill => "bridge-sigkill",
            Fault::ViewerStall => "viewer-stall",
        }
    }

    /// The fault named `name` (as [`Fault::name`] writes it).
    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether the fault reaches the bridge's connection to the apiserver
    /// (its watches can fail and it may relist). The others leave it alone.
    pub fn touches_upstream(self) -> bool {
        !matches!(self, Fault::EtcdCompaction | Fault::ViewerStall)
    }

    /// Whether the fault restarts the bridge (its counters start again).
    pub fn restarts_bridge(self) -> bool {
        matches!(self, Fault::BridgeTerm | Fault::BridgeKill)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One round as planned.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    pub fault: Fault,
    /// When the fault starts, after the round's writes begin.
    pub at: Duration,
    /// How long it lasts (proxy faults, a viewer's stall); how long the
    /// apiserver stays down for the others.
    pub length: Duration,
    /// Which viewer (stall) or which object (etcd writes) it picks.
    pub pick: u64,
}

/// A seeded random number generator (splitmix64): small, and the same
/// sequence on every machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A duration in `[low, high)`, to the millisecond.
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let span = (high - low).as_millis().max(1) as u64;
        low + Duration::from_millis(self.draw() % span)
    }
}

/// The plan of `rounds` rounds of `kinds` from `seed`: every kind once in
/// a shuffled order, then again in another, so that one round per kind
/// covers them all. A viewer stalls `stall` long.
pub fn plan(seed: u64, rounds: usize, kinds: &[Fault], stall: Duration) -> Vec<Planned> {
    let mut rng = Rng::new(seed);
    let mut order = Vec::new();
    while order.len() < rounds {
        let mut batch = kinds.to_vec();
        // Fisher–Yates.
        for i in (1..batch.len()).rev() {
            batch.swap(i, (rng.draw() % (i as u64 + 1)) as usize);
        }
        order.extend(batch);
    }
    order.truncate(rounds);
    order
        .into_iter()
        .map(|fault| {
            let at = rng.between(Duration::from_millis(500), Duration::from_millis(3000));
            let length = match fault {
                Fault::ViewerStall => stall,
                Fault::ProxyStall
                | Fault::ProxyDrop
                | Fault::ProxyReset
                | Fault::TlsStatus
                | Fault::TlsTruncated
                | Fault::TokenRotated
                | Fault::RbacRevoked
                | Fault::EtcdUnreachable => {
                    rng.between(Duration::from_secs(2), Duration::from_secs(6))
                }
                _ => rng.between(Duration::from_millis(0), Duration::from_millis(1500)),
            };
            Planned {
                fault,
                at,
                length,
                pick: rng.draw(),
            }
        })
        .collect()
}
