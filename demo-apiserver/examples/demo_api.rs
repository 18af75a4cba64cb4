//! Serves the demo API alone, over an empty control plane, for trying
//! clients against it: `cargo run -p watchlife-demo-apiserver --example
//! demo_api [ADDRESS]` (default 127.0.0.1:8081), then
//! `export KUBECONFIG=<the printed path>` and use kubectl.

use watchlife_controlplane::{Clock, ControlPlane};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8081".into());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let kubeconfig = std::env::temp_dir().join("watchlife-demo.kubeconfig");
    watchlife_demo_apiserver::write_kubeconfig(&kubeconfig, &url)?;
    println!("serving the demo API on {url}");
    println!("export KUBECONFIG={}", kubeconfig.display());
    let cp = ControlPlane::new(Clock::system());
    watchlife_demo_apiserver::serve(cp, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}
