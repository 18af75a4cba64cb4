//! Serves the demo API alone, over an empty control plane, for trying
//! clients against it: `cargo run -p watchlife-demo-apiserver --example
//! demo_api [ADDRESS]` (default 127.0.0.1:8081), then
//! `export KUBECONFIG=<the printed path>` and use kubectl.
//!
//! Beyond loopback the API needs a token: set `WATCHLIFE_DEMO_API_TOKEN`
//! (an environment variable, since flags show in the process list); the
//! written kubeconfig carries it.

use watchlife_controlplane::{Clock, ControlPlane};
use watchlife_demo_apiserver::ServeOptions;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8081".into());
    let token = std::env::var("WATCHLIFE_DEMO_API_TOKEN").ok();
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let kubeconfig = std::env::temp_dir().join("watchlife-demo.kubeconfig");
    watchlife_demo_apiserver::write_kubeconfig_with_token(&kubeconfig, &url, token.as_deref())?;
    let cp = ControlPlane::new(Clock::system());
    let options = ServeOptions {
        token,
        ..ServeOptions::default()
    };
    let served = watchlife_demo_apiserver::serve_with(cp, listener, options, async {
        let _ = tokio::signal::ctrl_c().await;
    });
    println!("serving the demo API on {url}");
    println!("export KUBECONFIG={}", kubeconfig.display());
    served.await
}
