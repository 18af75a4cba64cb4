//! The bench's own writes to the demo API, for the crowd: one configmap
//! updated at a steady rate.

use std::time::Duration;

/// Updates one configmap through the demo API, `rate` times a second, until
/// aborted: one MODIFIED event each.
pub async fn write_configmap(api: std::net::SocketAddr, rate: u32) {
    let path = "/api/v1/namespaces/default/configmaps";
    let object = |n: u64| crate::objects::numbered_configmap("bench-crowd", n);
    let _ = send(api, "POST", path, &object(0)).await;
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 1.. {
        ticks.tick().await;
        let _ = send(api, "PUT", &format!("{path}/bench-crowd"), &object(n)).await;
    }
}

/// One HTTP/1.0 request with a JSON body; whether it was answered 2xx.
async fn send(api: std::net::SocketAddr, method: &str, path: &str, body: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(api).await else {
        return false;
    };
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {api}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    answer.starts_with(b"HTTP/1.0 2") || answer.starts_with(b"HTTP/1.1 2")
}
