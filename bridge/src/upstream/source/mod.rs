//! Where events come from: a real cluster when one is configured, else the
//! embedded demo control plane. Either way the bridge reaches it through the
//! Kubernetes API with a kube client, and list-watches it with the same
//! Reflector.
//!
//! - [`cluster`]: kubeconfig or in-cluster service account.
//! - [`demo`]: the embedded control plane, its controllers, and its API.

pub mod cluster;
pub mod demo;
pub mod stages;
pub mod token_file;

use crate::cli::Args;
use crate::upstream::connections::Connections;
use stages::ServerStages;
use std::sync::Arc;
use watchlife_controlplane::ControlPlane;
use watchlife_protocol::{Source, Stage};

/// A source, connected and ready to list-watch.
pub struct Upstream {
    /// Clients that can only read (see [`read_only_connections`]).
    pub connections: Connections,
    /// What viewers are told about it.
    pub source: Source,
    /// What to watch when `--resources` is not given.
    pub default_resources: Vec<String>,
    /// Server-side stage times, where the source can tell them.
    pub server_stages: Option<Arc<dyn ServerStages>>,
    /// The stages measured for events from this source.
    pub observed: Vec<Stage>,
    /// The demo control plane, for the demo actions.
    pub demo: Option<ControlPlane>,
    /// The kubeconfig written for the demo's API, removed with this.
    pub kubeconfig: Option<demo::Kubeconfig>,
}

/// Why no source could be started.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(
        "cannot serve the demo's Kubernetes API on {addr}: {source} (choose another address with --demo-api)"
    )]
    DemoApi {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(String),
}

/// The configured cluster, unless `--demo` is given or none is configured,
/// in which case the demo. Says which it chose, and why, on stdout.
pub async fn choose(args: &Args) -> Result<Upstream, SourceError> {
    if !args.demo {
        match cluster::connect(args).await? {
            Ok(upstream) => {
                if let Source::Cluster { context, server } = &upstream.source {
                    println!("watching cluster context {context} ({server})");
                }
                return Ok(upstream);
            }
            Err(reason) => println!("{reason}: starting the embedded demo control plane"),
        }
    }
    demo::start(args).await
}

/// Kube clients for `config` that refuse, before it leaves the bridge, any
/// request but GET: watchlife lists, watches and discovers, and never writes.
pub fn read_only_connections(config: kube::Config) -> Result<Connections, SourceError> {
    // kube writes a kubeconfig's token into the Authorization header with
    // tower-http's `bearer`, which panics on a token that is no header
    // value (a control character, a line break pasted with it): such a
    // kubeconfig is refused here, with a message, instead.
    if let Some(token) = &config.auth_info.token {
        use secrecy::ExposeSecret;
        if http::HeaderValue::try_from(format!("Bearer {}", token.expose_secret())).is_err() {
            return Err(SourceError::Config(
                "the kubeconfig's token cannot be sent in an HTTP header: it holds a control character or a line break".into(),
            ));
        }
    }
    let (config, token_file) = take_token_file(config)?;
    Connections::new(move || {
        let builder = kube::client::ClientBuilder::try_from(config.clone())
            .map_err(|e| format!("cannot build a client: {e}"))?;
        let builder = builder.with_layer(&tower::filter::FilterLayer::new(only_reads));
        Ok(match &token_file {
            Some(file) => builder
                .with_layer(&token_file::TokenFileLayer(file.clone()))
                .build(),
            None => builder.build(),
        })
    })
    .map_err(SourceError::Config)
}

/// Takes the token file out of `config` when it is the credential kube
/// would use (no auth provider, user name or token comes before it), so
/// that [`token_file`] sends it instead, with client-go's rule of reading
/// it again after a 401.
fn take_token_file(
    mut config: kube::Config,
) -> Result<(kube::Config, Option<std::sync::Arc<token_file::TokenFile>>), SourceError> {
    let auth = &config.auth_info;
    if auth.auth_provider.is_some() || auth.username.is_some() || auth.token.is_some() {
        return Ok((config, None));
    }
    let Some(path) = config.auth_info.token_file.take() else {
        return Ok((config, None));
    };
    let file =
        token_file::TokenFile::open(std::path::Path::new(&path)).map_err(SourceError::Config)?;
    Ok((config, Some(file)))
}

fn only_reads(
    request: http::Request<kube::client::Body>,
) -> Result<http::Request<kube::client::Body>, tower::BoxError> {
    if request.method() == http::Method::GET {
        Ok(request)
    } else {
        Err(format!(
            "watchlife only reads from clusters: refused {} {}",
            request.method(),
            request.uri().path()
        )
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_client_refuses_every_write_before_sending_it() {
        // Nothing listens on this port: a request that got through would
        // fail with a connection error instead.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = read_only_connections(config).unwrap().client();
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            let request = http::Request::builder()
                .method(method)
                .uri("/api/v1/namespaces/default/pods")
                .body(Vec::new())
                .unwrap();
            let error = client.request_text(request).await.unwrap_err().to_string();
            assert!(error.contains("only reads"), "{method}: {error}");
        }
        let get = http::Request::get("/api/v1/pods").body(Vec::new()).unwrap();
        let error = client.request_text(get).await.unwrap_err().to_string();
        assert!(!error.contains("only reads"), "{error}");
    }

    #[tokio::test]
    async fn a_token_that_is_no_header_value_is_refused_not_a_panic() {
        for token in ["abc\n", "\0\0\0", "tok\u{7f}"] {
            let mut config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
            config.auth_info.token = Some(token.to_string().into());
            let Err(error) = read_only_connections(config) else {
                panic!("{token:?} was taken");
            };
            let error = error.to_string();
            assert!(error.contains("token"), "{token:?}: {error}");
        }
        let mut config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        config.auth_info.token = Some("a-good-token".to_string().into());
        read_only_connections(config).unwrap();
    }
}
