//! How the bridge reaches etcd: TLS from `--etcd-cacert`, `--etcd-cert` and
//! `--etcd-key`, and the connection's timeouts.

use super::{EtcdAccess, EtcdError};
use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::time::Duration;

/// Longest wait for a TCP (and TLS) connection to an etcd endpoint; the
/// next endpoint is tried after it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// HTTP/2 pings on the watch's connection, and how long a ping may go
/// unanswered: a watch on a connection that died without a word (a dropped
/// network, a frozen etcd) ends instead of waiting for events forever.
pub const KEEP_ALIVE: Duration = Duration::from_secs(10);
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// TLS for etcd's `https://` endpoints: trusting `ca_cert` (no other root)
/// and presenting the client pair when given. `None` when no file was
/// given. Every file is read and parsed here, so that a missing or
/// malformed one is told at start rather than at each connection.
pub fn tls_options(access: &EtcdAccess) -> Result<Option<TlsOptions>, EtcdError> {
    let mut tls = TlsOptions::new();
    if let Some(ca) = &access.ca_cert {
        let pem = read(ca)?;
        certificates(&pem, ca)?;
        tls = tls.ca_certificate(Certificate::from_pem(pem));
    }
    match (&access.client_cert, &access.client_key) {
        (Some(cert), Some(key)) => {
            let (cert_pem, key_pem) = (read(cert)?, read(key)?);
            certificates(&cert_pem, cert)?;
            PrivateKeyDer::from_pem_slice(&key_pem)
                .map_err(|e| EtcdError::Tls(format!("client key {}: {e}", key.display())))?;
            tls = tls.identity(Identity::from_pem(cert_pem, key_pem));
        }
        (None, None) if access.ca_cert.is_none() => return Ok(None),
        (None, None) => {}
        _ => {
            return Err(EtcdError::Tls(
                "--etcd-cert and --etcd-key go together".into(),
            ));
        }
    }
    Ok(Some(tls))
}

/// Options for one connection to `endpoint`: TLS unless it says `http://`
/// (a bare `host:port` is TLS when TLS files were given, as with etcdctl).
pub fn connect_options(endpoint: &str, tls: Option<&TlsOptions>) -> ConnectOptions {
    let options = ConnectOptions::new()
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_keep_alive(KEEP_ALIVE, KEEP_ALIVE_TIMEOUT);
    match tls {
        Some(tls) if !endpoint.starts_with("http://") => options.with_tls(tls.clone()),
        _ => options,
    }
}

fn read(path: &Path) -> Result<Vec<u8>, EtcdError> {
    std::fs::read(path).map_err(|source| EtcdError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Checks that `pem` holds at least one well-formed certificate.
fn certificates(pem: &[u8], path: &Path) -> Result<(), EtcdError> {
    let bad = |why: String| EtcdError::Tls(format!("certificate {}: {why}", path.display()));
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("watchlife-etcd-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn no_files_means_no_tls() {
        let access = EtcdAccess {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            ..EtcdAccess::default()
        };
        assert!(tls_options(&access).unwrap().is_none());
    }

    #[test]
    fn bad_files_are_told_at_start() {
        let missing = EtcdAccess {
            ca_cert: Some("/nonexistent/ca.crt".into()),
            ..EtcdAccess::default()
        };
        assert!(matches!(tls_options(&missing), Err(EtcdError::Read { .. })));

        let not_pem = EtcdAccess {
            ca_cert: Some(file("ca.crt", "not a certificate")),
            ..EtcdAccess::default()
        };
        let error = tls_options(&not_pem).unwrap_err().to_string();
        assert!(error.contains("no PEM certificate"), "{error}");

        let half_pair = EtcdAccess {
            client_cert: Some(file("client.crt", "")),
            ..EtcdAccess::default()
        };
        let error = tls_options(&half_pair).unwrap_err().to_string();
        assert!(error.contains("go together"), "{error}");
    }
}
