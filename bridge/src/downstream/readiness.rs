//! `/readyz`: whether a viewer sent here is shown the whole cluster.
//!
//! Ready once every watched resource has been listed once (a LIST, or a
//! streaming list up to its closing bookmark): before that, a viewer would
//! get a partial set of objects, so a load balancer should send viewers to
//! a replica that has listed. A cluster that cannot be reached never lists;
//! after a grace period the bridge is ready anyway, because then the page
//! is where the error is shown, and it must be reachable to show it.
//!
//! `/healthz` stays what it is: the process serves.

use std::time::Duration;

/// How long a bridge that has not listed every resource is kept out of
/// the load balancer: a healthy cluster lists in well under it (150,000
/// objects take about 10 s, BENCHMARKS.md), a Reflector in backoff retries
/// several times within it (800 ms doubling), so what is still missing
/// then is an error the page should show.
pub const READY_GRACE: Duration = Duration::from_secs(30);

/// The answer to `/readyz`: ready or not, and the words for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    pub ready: bool,
    pub words: String,
}

/// Readiness of a bridge up for `up`, watching `watched` resources of which
/// `unlisted` have never finished a list, with `grace` (see [`READY_GRACE`]).
pub fn readiness(watched: usize, unlisted: usize, up: Duration, grace: Duration) -> Readiness {
    let listed = watched - unlisted.min(watched);
    if unlisted == 0 {
        return Readiness {
            ready: true,
            words: format!("ready: {watched} of {watched} resources listed\n"),
        };
    }
    if up >= grace {
        return Readiness {
            ready: true,
            words: format!(
                "ready: {listed} of {watched} resources listed after {} s; the page shows why the others are not\n",
                grace.as_secs()
            ),
        };
    }
    Readiness {
        ready: false,
        words: format!("not ready: {listed} of {watched} resources listed\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn ready_once_every_resource_has_listed() {
        assert!(!readiness(2, 1, S(1), READY_GRACE).ready);
        let r = readiness(2, 0, S(1), READY_GRACE);
        assert!(r.ready);
        assert_eq!(r.words, "ready: 2 of 2 resources listed\n");
    }

    #[test]
    fn a_cluster_that_never_lists_is_ready_after_the_grace_so_its_error_can_be_shown() {
        let r = readiness(3, 3, S(29), S(30));
        assert_eq!(
            (r.ready, r.words.as_str()),
            (false, "not ready: 0 of 3 resources listed\n")
        );
        let r = readiness(3, 3, S(30), S(30));
        assert!(r.ready);
        assert!(r.words.contains("the page shows why"), "{}", r.words);
    }
}
