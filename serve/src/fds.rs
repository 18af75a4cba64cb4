//! The process's limit of open files.
//!
//! Every connection holds a file descriptor. Linux starts most processes with
//! a soft limit of 1,024 under a hard limit hundreds of times higher; a
//! server that keeps the soft one fails to accept (and to answer `/healthz`)
//! long before its own caps apply. Go's runtime raises the soft limit to the
//! hard one at start for the same reason.

/// Raises the soft limit of open files to the hard limit and returns the
/// limit now in force; `None` where it cannot be read (not Unix).
pub fn raise_open_files_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given, nothing else.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit reads the struct it is given, nothing else.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit = raised;
            }
        }
        #[allow(clippy::useless_conversion, reason = "rlim_t is not u64 everywhere")]
        Some(u64::try_from(limit.rlim_cur).unwrap_or(u64::MAX))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_limit_in_force_is_at_least_the_usual_one() {
        if let Some(limit) = super::raise_open_files_limit() {
            assert!(limit >= 256, "{limit}");
        }
    }
}
