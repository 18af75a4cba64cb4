//! Which Kubernetes a list-watch behaves as: a release, and the feature gates
//! of that release as its users flip them.
//!
//! A [`Profile`] selects the client's behaviour (client-go's Reflector and
//! FIFO) *and* the server's (the demo apiserver's watch cache), each as that
//! release has it:
//!
//! - [`Release::V1_20`]: client-go v1.20.2 (LIST, then WATCH; DeltaFIFO) and
//!   kube-apiserver v1.20.2 (no streaming lists, no consistent reads from the
//!   cache). No gate of the list below exists there.
//! - [`Release::V1_36`]: client-go v0.36.4 (streaming lists, RealFIFO with an
//!   atomic relist) and the v0.36.4 generic apiserver (WatchList served from
//!   the watch cache, consistent LISTs from the cache, 429 before the cache is
//!   ready).
//!
//! Gates are named and defaulted as in client-go's
//! `features/known_features.go` and the apiserver's
//! `pkg/features/kube_features.go` (v0.36.4). A gate that Kubernetes locks to
//! its default ("GA, LockToDefault") refuses the other value, as Kubernetes
//! does.

use std::fmt;
use std::str::FromStr;

/// A Kubernetes release whose list-watch is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Release {
    /// Kubernetes v1.20.2 (January 2021).
    V1_20,
    /// Kubernetes v1.36 (client-go and apiserver v0.36.4).
    #[default]
    V1_36,
}

impl Release {
    /// Every release modelled, oldest first.
    pub const ALL: [Release; 2] = [Release::V1_20, Release::V1_36];

    /// The release as users write it: `1.20`, `1.36`.
    pub fn as_str(self) -> &'static str {
        match self {
            Release::V1_20 => "1.20",
            Release::V1_36 => "1.36",
        }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Release {
    type Err = ProfileError;

    /// `1.20`, `v1.20`, `1.20.2` and the like; `1.36`, `v1.36.4` and the like.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim().trim_start_matches('v');
        let minor = trimmed
            .strip_prefix("1.")
            .map(|rest| rest.split('.').next().unwrap_or(rest));
        match minor {
            Some("20") => Ok(Release::V1_20),
            Some("36") => Ok(Release::V1_36),
            _ => Err(ProfileError::UnknownRelease(s.to_string())),
        }
    }
}

/// A feature gate of client-go or of the apiserver that changes list-watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// client-go: an informer starts with a streaming list
    /// (`sendInitialEvents`) instead of LIST (Beta, on since 1.35).
    WatchListClient,
    /// client-go: RealFIFO instead of DeltaFIFO (GA and locked in 1.36).
    InOrderInformers,
    /// client-go: a relist reaches the FIFO as one atomic batch (Beta, on, 1.36).
    AtomicFifo,
    /// client-go: the FIFO is unlocked while an item is processed (Beta, on, 1.36).
    UnlockWhileProcessingFifo,
    /// client-go: the informer tells the resourceVersion it has synced to
    /// (GA 1.35).
    InformerResourceVersion,
    /// apiserver: serves `sendInitialEvents` watches (Beta, on since 1.34).
    WatchList,
    /// apiserver: a LIST from `""` is served from the watch cache once it has
    /// caught up with etcd (GA and locked in 1.34).
    ConsistentListFromCache,
    /// apiserver: paginated and exact-resourceVersion LISTs from the watch
    /// cache's snapshots (Beta, on since 1.34).
    ListFromCacheSnapshot,
    /// apiserver: requests to a watch cache that is (re)initializing get 429
    /// with Retry-After instead of waiting (GA and locked in 1.34).
    ResilientWatchCacheInitialization,
    /// apiserver: `/readyz` waits for the watch caches (Beta, on, 1.36).
    WatchCacheInitializationPostStartHook,
}

impl Gate {
    /// Every gate modelled, client-go's first.
    pub const ALL: [Gate; 10] = [
        Gate::WatchListClient,
        Gate::InOrderInformers,
        Gate::AtomicFifo,
        Gate::UnlockWhileProcessingFifo,
        Gate::InformerResourceVersion,
        Gate::WatchList,
        Gate::ConsistentListFromCache,
        Gate::ListFromCacheSnapshot,
        Gate::ResilientWatchCacheInitialization,
        Gate::WatchCacheInitializationPostStartHook,
    ];

    /// The gate's name, as Kubernetes spells it.
    pub fn name(self) -> &'static str {
        match self {
            Gate::WatchListClient => "WatchListClient",
            Gate::InOrderInformers => "InOrderInformers",
            Gate::AtomicFifo => "AtomicFIFO",
            Gate::UnlockWhileProcessingFifo => "UnlockWhileProcessingFIFO",
            Gate::InformerResourceVersion => "InformerResourceVersion",
            Gate::WatchList => "WatchList",
            Gate::ConsistentListFromCache => "ConsistentListFromCache",
            Gate::ListFromCacheSnapshot => "ListFromCacheSnapshot",
            Gate::ResilientWatchCacheInitialization => "ResilientWatchCacheInitialization",
            Gate::WatchCacheInitializationPostStartHook => "WatchCacheInitializationPostStartHook",
        }
    }

    /// Whether client-go reads it (else the apiserver does).
    pub fn is_client(self) -> bool {
        matches!(
            self,
            Gate::WatchListClient
                | Gate::InOrderInformers
                | Gate::AtomicFifo
                | Gate::UnlockWhileProcessingFifo
                | Gate::InformerResourceVersion
        )
    }

    /// The gate's default in `release`, and whether it is locked there;
    /// `None` where the release has no such gate (every gate here came
    /// after 1.20).
    fn spec(self, release: Release) -> Option<(bool, Locked)> {
        match release {
            Release::V1_20 => None,
            Release::V1_36 => Some(match self {
                Gate::InOrderInformers
                | Gate::ConsistentListFromCache
                | Gate::ResilientWatchCacheInitialization => (true, Locked::Yes),
                _ => (true, Locked::No),
            }),
        }
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Gate {
    type Err = ProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Gate::ALL
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| ProfileError::UnknownGate(s.to_string()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Locked {
    Yes,
    No,
}

/// Why a release or a gate setting was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown Kubernetes release {0:?}: watchlife models 1.20 and 1.36")]
    UnknownRelease(String),
    #[error(
        "unknown feature gate {0:?}; known: {known}",
        known = Gate::ALL.map(Gate::name).join(", ")
    )]
    UnknownGate(String),
    #[error("feature gate {gate} does not exist in Kubernetes {release}")]
    NotInRelease { gate: Gate, release: Release },
    #[error("feature gate {gate} is locked to {locked} in Kubernetes {release}")]
    LockedGate {
        gate: Gate,
        release: Release,
        locked: bool,
    },
    #[error("feature gate setting {0:?} is not NAME=true or NAME=false")]
    BadSetting(String),
}

/// A release and its gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    release: Release,
    /// Each gate's value, indexed as [`Gate::ALL`]; false where the release
    /// has no such gate.
    enabled: [bool; Gate::ALL.len()],
}

impl Default for Profile {
    fn default() -> Self {
        Profile::new(Release::default())
    }
}

impl Profile {
    /// `release` with every gate at its default.
    pub fn new(release: Release) -> Self {
        let mut enabled = [false; Gate::ALL.len()];
        for (i, gate) in Gate::ALL.into_iter().enumerate() {
            enabled[i] = gate.spec(release).is_some_and(|(on, _)| on);
        }
        Profile { release, enabled }
    }

    pub fn release(&self) -> Release {
        self.release
    }

    /// Whether `gate` is on (always false where the release has no such gate).
    pub fn enabled(&self, gate: Gate) -> bool {
        self.enabled[Self::index(gate)]
    }

    /// Sets `gate`, as `--feature-gates` or `KUBE_FEATURE_<name>` would.
    pub fn set(&mut self, gate: Gate, on: bool) -> Result<(), ProfileError> {
        let release = self.release;
        match gate.spec(release) {
            None => Err(ProfileError::NotInRelease { gate, release }),
            Some((default, Locked::Yes)) if on != default => Err(ProfileError::LockedGate {
                gate,
                release,
                locked: default,
            }),
            Some(_) => {
                self.enabled[Self::index(gate)] = on;
                Ok(())
            }
        }
    }

    /// Applies a `--feature-gates` value: `Name=true,Other=false`.
    pub fn set_list(&mut self, list: &str) -> Result<(), ProfileError> {
        for setting in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = setting
                .split_once('=')
                .ok_or_else(|| ProfileError::BadSetting(setting.to_string()))?;
            let on = parse_bool(value.trim())
                .ok_or_else(|| ProfileError::BadSetting(setting.to_string()))?;
            self.set(name.trim().parse()?, on)?;
        }
        Ok(())
    }

    /// Applies client-go's environment variables, `KUBE_FEATURE_<name>`,
    /// for the client's gates (`features/envvar.go`: the apiserver does not
    /// read them). Unlike client-go, which logs a bad value and goes on, a
    /// bad value here is an error: a speaker should hear about a typo.
    pub fn set_from_env<'a>(
        &mut self,
        vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), ProfileError> {
        for (key, value) in vars {
            let Some(name) = key.strip_prefix("KUBE_FEATURE_") else {
                continue;
            };
            let gate: Gate = match name.parse() {
                Ok(g) if Gate::is_client(g) => g,
                // client-go ignores variables of gates it does not know.
                _ => continue,
            };
            let on = parse_bool(value.trim())
                .ok_or_else(|| ProfileError::BadSetting(format!("{key}={value}")))?;
            self.set(gate, on)?;
        }
        Ok(())
    }

    /// The gates changed from the release's defaults, as `Name=value`.
    pub fn changed(&self) -> Vec<String> {
        let defaults = Profile::new(self.release);
        Gate::ALL
            .into_iter()
            .filter(|g| self.enabled(*g) != defaults.enabled(*g))
            .map(|g| format!("{}={}", g.name(), self.enabled(g)))
            .collect()
    }

    /// Whether the client opens a streaming list (client-go ≥ 1.35 with
    /// `WatchListClient`).
    pub fn streams_lists(&self) -> bool {
        self.enabled(Gate::WatchListClient)
    }

    /// Whether the informer's queue is RealFIFO (else DeltaFIFO).
    pub fn real_fifo(&self) -> bool {
        self.enabled(Gate::InOrderInformers)
    }

    fn index(gate: Gate) -> usize {
        Gate::ALL
            .iter()
            .position(|g| *g == gate)
            .expect("every gate is in Gate::ALL")
    }
}

impl fmt::Display for Profile {
    /// `1.36`, or `1.36 (WatchListClient=false)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let changed = self.changed();
        if changed.is_empty() {
            write!(f, "{}", self.release)
        } else {
            write!(f, "{} ({})", self.release, changed.join(","))
        }
    }
}

/// Go's `strconv.ParseBool`, which client-go uses for its variables.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_as_users_write_them() {
        for s in ["1.20", "v1.20", "1.20.2", "v1.20.2"] {
            assert_eq!(s.parse::<Release>(), Ok(Release::V1_20), "{s}");
        }
        for s in ["1.36", "v1.36.4"] {
            assert_eq!(s.parse::<Release>(), Ok(Release::V1_36), "{s}");
        }
        assert!("1.2".parse::<Release>().is_err());
        assert!("1.200".parse::<Release>().is_err());
        assert!("2.36".parse::<Release>().is_err());
    }

    #[test]
    fn defaults_are_each_releases_own() {
        let old = Profile::new(Release::V1_20);
        let new = Profile::new(Release::V1_36);
        for gate in Gate::ALL {
            assert!(!old.enabled(gate), "{gate} on in 1.20");
            assert!(new.enabled(gate), "{gate} off in 1.36");
        }
        assert_eq!(new.to_string(), "1.36");
    }

    #[test]
    fn gates_flip_as_kubernetes_lets_them() {
        let mut p = Profile::new(Release::V1_36);
        p.set_list("WatchListClient=false, WatchList=False")
            .unwrap();
        assert!(!p.streams_lists());
        assert!(!p.enabled(Gate::WatchList));
        assert_eq!(
            p.to_string(),
            "1.36 (WatchListClient=false,WatchList=false)"
        );
        assert!(matches!(
            p.set_list("InOrderInformers=false"),
            Err(ProfileError::LockedGate { .. })
        ));
        assert!(matches!(
            p.set_list("NoSuchGate=true"),
            Err(ProfileError::UnknownGate(_))
        ));
        assert!(matches!(
            p.set_list("WatchList"),
            Err(ProfileError::BadSetting(_))
        ));
        let mut old = Profile::new(Release::V1_20);
        assert!(matches!(
            old.set_list("WatchListClient=true"),
            Err(ProfileError::NotInRelease { .. })
        ));
    }

    #[test]
    fn client_go_variables_set_client_gates_only() {
        let mut p = Profile::new(Release::V1_36);
        p.set_from_env([
            ("KUBE_FEATURE_WatchListClient", "0"),
            ("KUBE_FEATURE_WatchList", "false"),
            ("KUBE_FEATURE_Unknown", "false"),
            ("PATH", "/bin"),
        ])
        .unwrap();
        assert!(!p.streams_lists());
        assert!(p.enabled(Gate::WatchList), "the server does not read them");
        assert!(
            p.set_from_env([("KUBE_FEATURE_AtomicFIFO", "maybe")])
                .is_err()
        );
    }
}
