//! The release binary carries the app: it serves it from an empty directory.

use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::TempDir;

#[tokio::test]
async fn release_binary_serves_the_embedded_app_from_an_empty_directory() {
    let empty = TempDir::new("watchlife-empty-cwd");
    let bridge = Bridge::start_in(&empty.0, &["--demo", "--demo-idle"]).await;

    let index = watchlife_tests::http::get(bridge.addr, "/").await.unwrap();
    assert_eq!(index.status, 200, "{}", index.text());
    assert!(
        index
            .header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = index.text();
    let wasm = html
        .split(['"', '\''])
        .find(|s| s.ends_with(".wasm"))
        .unwrap_or_else(|| panic!("index.html names a .wasm file: {html}"));
    let module = watchlife_tests::http::get(bridge.addr, wasm).await.unwrap();
    assert_eq!(module.status, 200);
    assert_eq!(module.header("content-type"), Some("application/wasm"));
    assert_eq!(&module.body[..4], b"\0asm", "a WebAssembly module");

    let version = watchlife_tests::http::get(bridge.addr, "/version")
        .await
        .unwrap();
    let version: serde_json::Value = serde_json::from_slice(&version.body).unwrap();
    assert_eq!(version["app_embedded"], true);
    assert_eq!(version["version"], env!("CARGO_PKG_VERSION"));
}
