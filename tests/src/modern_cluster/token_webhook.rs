//! A token-review webhook on loopback (plain HTTP): the apiserver asks it
//! who a bearer token belongs to, as it would ask a core cluster's
//! `tokenreviews` API. It knows one token, the harness's own, and says it
//! is an administrator in `system:masters`; every other token is refused.
//!
//! This lets the harness's HTTP client, which has no client certificate,
//! act as an administrator with a bearer token, while the kubeconfig handed
//! to client-go, kube-rs and watchlife authenticates with a certificate.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The user the token stands for: `system:masters` may do anything without
/// an authorizer being asked.
const USER: &str = "watchlife-harness";
const GROUP: &str = "system:masters";

/// The largest review body read: a TokenReview is a few hundred bytes.
const MAX_BODY: usize = 1 << 20;

/// The running webhook; it stops when dropped.
pub(super) struct TokenWebhook {
    /// `http://127.0.0.1:PORT`.
    pub(super) url: String,
    task: JoinHandle<()>,
}

impl TokenWebhook {
    /// Listens on a free loopback port and answers reviews of `token`.
    pub(super) async fn start(token: String) -> TokenWebhook {
        let port = crate::free_port();
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("listening on 127.0.0.1:{port}: {e}"));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, token.clone()));
            }
        });
        TokenWebhook {
            url: format!("http://127.0.0.1:{port}"),
            task,
        }
    }
}

impl Drop for TokenWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Answers the requests of one keep-alive connection, each a TokenReview
/// POSTed with a Content-Length, until the peer closes it.
async fn serve(stream: TcpStream, token: String) {
    let mut stream = BufReader::new(stream);
    loop {
        let mut content_length = 0;
        let mut line = String::new();
        // The request line and the headers, up to the empty line.
        loop {
            line.clear();
            match stream.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                content_length = value.trim().parse().unwrap_or(0);
            }
        }
        if content_length > MAX_BODY {
            return;
        }
        let mut body = vec![0; content_length];
        if stream.read_exact(&mut body).await.is_err() {
            return;
        }
        let review: Value = serde_json::from_slice(&body).unwrap_or_default();
        let answer = serde_json::to_vec(&reviewed(&review, &token)).unwrap();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        let out = stream.get_mut();
        if out.write_all(head.as_bytes()).await.is_err() || out.write_all(&answer).await.is_err() {
            return;
        }
    }
}

/// The TokenReview with its status: authenticated as [`USER`] when its
/// token is `token`, for the audiences it asked about.
fn reviewed(review: &Value, token: &str) -> Value {
    let known = review["spec"]["token"].as_str() == Some(token);
    let mut status = json!({"authenticated": known});
    if known {
        status["user"] = json!({"username": USER, "uid": USER, "groups": [GROUP]});
        status["audiences"] = review["spec"]["audiences"].clone();
    }
    json!({
        "apiVersion": review["apiVersion"].as_str().unwrap_or("authentication.k8s.io/v1"),
        "kind": "TokenReview",
        "status": status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_is_an_administrator() {
        let review = |token: &str| {
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                   "spec": {"token": token, "audiences": ["https://a"]}})
        };
        let yes = reviewed(&review("t"), "t");
        assert_eq!(yes["status"]["authenticated"], true);
        assert_eq!(yes["status"]["user"]["groups"], json!([GROUP]));
        assert_eq!(yes["status"]["audiences"], json!(["https://a"]));
        let no = reviewed(&review("u"), "t");
        assert_eq!(no["status"]["authenticated"], false);
        assert!(no["status"].get("user").is_none());
    }
}
