//! A steady writer: creates, changes and deletes objects of the run's kinds
//! in a few namespaces, through the apiserver, with its choices drawn from a
//! seed; and the apiserver's own list of what there is.

use super::cluster::Kind;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;
use watchlife_testkit::client::Client;

/// How long one write may take before the writer gives up on it.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a LIST may keep answering 429 (a v1.36 watch cache
/// initializing after a restart) before the harness stops asking.
const BUSY_FOR: Duration = Duration::from_secs(30);

/// The writer's own account of the objects it made and has not deleted.
#[derive(Debug, Default)]
pub struct Written {
    /// The kinds written.
    pub kinds: Vec<Kind>,
    /// The namespaces written to.
    pub namespaces: Vec<&'static str>,
    /// `resource/namespace/name`.
    pub live: Vec<String>,
    pub made: u64,
    pub changed: u64,
    pub deleted: u64,
    /// Writes that failed (the apiserver away, a connection cut).
    pub failed: u64,
    pub rng: u64,
}

impl Written {
    /// A writer of `kinds` into `namespaces`, its choices seeded by `seed`.
    pub fn new(kinds: &[Kind], namespaces: &[&'static str], seed: u64) -> Written {
        Written {
            kinds: kinds.to_vec(),
            namespaces: namespaces.to_vec(),
            rng: seed | 1,
            ..Written::default()
        }
    }

    /// xorshift64: the same run of choices every time.
    fn roll(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// One create, update or delete, through the apiserver; an error when it
    /// was not answered as expected (its effect then unknown).
    pub async fn step(&mut self, client: &Client) -> Result<(), String> {
        let roll = self.roll();
        let choice = roll % 100;
        let create = self.live.len() < 12 || (self.live.len() < 60 && choice < 35);
        if create {
            let kind = self.kinds[(roll >> 8) as usize % self.kinds.len()];
            let namespace = self.namespaces[(roll >> 16) as usize % self.namespaces.len()];
            let name = format!("w{}", self.made);
            self.made += 1;
            let mut body = json!({
                "apiVersion": kind.api_version, "kind": kind.kind,
                "metadata": {"name": name},
            });
            match kind.kind {
                "ConfigMap" => body["data"] = json!({"n": "0"}),
                "Pod" => {
                    body["spec"] =
                        json!({"containers": [{"name": "app", "image": "registry.invalid/app:1"}]})
                }
                _ => body["spec"] = json!({"n": 0}),
            }
            let path = kind.collection(namespace);
            let code = call(client, "POST", &path, None, &body).await?;
            if code != 201 {
                return Err(format!("create {} {name}: {code}", kind.resource));
            }
            let resource = kind.resource;
            self.live.push(format!("{resource}/{namespace}/{name}"));
            return Ok(());
        }
        let index = (roll >> 24) as usize % self.live.len();
        let (resource, rest) = self.live[index].split_once('/').unwrap();
        let (namespace, name) = rest.split_once('/').unwrap();
        let kind = self
            .kinds
            .iter()
            .find(|k| k.resource == resource)
            .expect("a kind the writer writes");
        let path = format!("{}/{name}", kind.collection(namespace));
        if choice < 80 {
            let patch = json!({"metadata": {"annotations": {"step": self.changed.to_string()}}});
            let code = call(
                client,
                "PATCH",
                &path,
                Some("application/merge-patch+json"),
                &patch,
            )
            .await?;
            match code {
                200 => self.changed += 1,
                // Deleted behind the writer's back (straight in etcd).
                404 => {
                    self.live.swap_remove(index);
                }
                _ => return Err(format!("patch {path}: {code}")),
            }
        } else {
            // Unscheduled Pods go at once, as ConfigMaps do.
            let code = call(
                client,
                "DELETE",
                &format!("{path}?gracePeriodSeconds=0"),
                None,
                &serde_json::Value::Null,
            )
            .await?;
            if code != 200 && code != 404 {
                return Err(format!("delete {path}: {code}"));
            }
            self.live.swap_remove(index);
            self.deleted += 1;
        }
        Ok(())
    }
}

/// One request, its status code, or why there was none.
async fn call(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &serde_json::Value,
) -> Result<u16, String> {
    let body = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(body).unwrap()
    };
    let content_type = content_type.or((!body.is_empty()).then_some("application/json"));
    match tokio::time::timeout(
        WRITE_TIMEOUT,
        client.try_call(method, path, content_type, body, None),
    )
    .await
    {
        Ok(Ok(reply)) => Ok(reply.code),
        Ok(Err(e)) => Err(format!("{method} {path}: {e}")),
        Err(_) => Err(format!(
            "{method} {path}: no answer within {WRITE_TIMEOUT:?}"
        )),
    }
}

/// The writer, running until [`Writing::stop`].
pub struct Writing {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Written>,
}

impl Writing {
    /// Writes with `pause` between writes; with `strict`, a failed write
    /// fails the test, else it is counted and the writer waits a little.
    pub fn start(client: Client, mut written: Written, pause: Duration, strict: bool) -> Writing {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let task = tokio::spawn(async move {
            while !stopping.load(Ordering::Relaxed) {
                if let Err(e) = written.step(&client).await {
                    assert!(!strict, "{e}");
                    written.failed += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                tokio::time::sleep(pause).await;
            }
            written
        });
        Writing { stop, task }
    }

    /// Stops after the write under way and returns the account.
    pub async fn stop(self) -> Written {
        self.stop.store(true, Ordering::Relaxed);
        self.task
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }
}

/// What the apiserver lists now of `kinds`: `resource/namespace/name` →
/// resourceVersion, every namespace. A 429 (a watch cache initializing) is
/// asked again after its Retry-After, for up to [`BUSY_FOR`].
pub async fn listed(client: &Client, kinds: &[Kind]) -> BTreeMap<String, String> {
    let mut objects = BTreeMap::new();
    for kind in kinds {
        let deadline = std::time::Instant::now() + BUSY_FOR;
        let reply = loop {
            let reply = client.get(&kind.everywhere()).await;
            if reply.code != 429 || std::time::Instant::now() >= deadline {
                break reply;
            }
            let retry_after = reply.body["details"]["retryAfterSeconds"]
                .as_u64()
                .unwrap_or(1);
            tokio::time::sleep(Duration::from_secs(retry_after)).await;
        };
        assert_eq!(reply.code, 200, "LIST {}: {}", kind.resource, reply.text);
        for item in reply.body["items"].as_array().expect("a list has items") {
            let meta = &item["metadata"];
            let text = |field: &str| {
                meta[field]
                    .as_str()
                    .unwrap_or_else(|| panic!("{field} of {item}"))
            };
            objects.insert(
                format!("{}/{}/{}", kind.resource, text("namespace"), text("name")),
                text("resourceVersion").to_string(),
            );
        }
    }
    objects
}

/// Creates `namespaces` (each must be new).
pub async fn create_namespaces(client: &Client, namespaces: &[&str]) {
    for namespace in namespaces {
        let reply = client
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
            )
            .await;
        assert_eq!(reply.code, 201, "namespace {namespace}: {}", reply.text);
    }
}
