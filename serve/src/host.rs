//! The `Host` rule of a loopback server without a token, shared by the
//! bridge and the demo API, and the comparison of secrets.
//!
//! A page on `evil.example` can re-point its own name at 127.0.0.1 (DNS
//! rebinding): the browser then sends it requests for the loopback server as
//! same-origin ones, with `Host: evil.example`. A loopback server that holds
//! no token therefore answers only to names that cannot be re-pointed:
//! `localhost`, `*.localhost` (which browsers resolve to loopback
//! themselves) and IP literals.

use std::net::IpAddr;

/// The name part of `host[:port]`, lower-cased (an IPv6 literal keeps its
/// brackets).
pub fn host_name(host: &str) -> String {
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        host.split(':').next().unwrap_or(host)
    };
    name.trim().to_ascii_lowercase()
}

/// Whether `name` (from [`host_name`]) is one no page can re-point:
/// `localhost`, a `.localhost` name, or an IP address.
pub fn is_rebinding_proof(name: &str) -> bool {
    name == "localhost"
        || name.ends_with(".localhost")
        || name.trim_matches(['[', ']']).parse::<IpAddr>().is_ok()
}

/// Compares without stopping at the first difference, so the time taken
/// does not tell an attacker how much of a guess was right.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_ip_literals_pass_and_other_names_do_not() {
        for ok in [
            "localhost",
            "LOCALHOST:8081",
            "app.localhost",
            "127.0.0.1:8081",
            "[::1]:8081",
            "10.1.2.3",
        ] {
            assert!(is_rebinding_proof(&host_name(ok)), "{ok}");
        }
        for bad in [
            "evil.example:8081",
            "localhost.evil.example",
            "",
            "127.0.0.1.nip.io",
        ] {
            assert!(!is_rebinding_proof(&host_name(bad)), "{bad}");
        }
    }

    #[test]
    fn secrets_compare_equal_only_when_equal() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
        assert!(!constant_time_eq(b"s3cret", b"s3cre"));
    }
}
