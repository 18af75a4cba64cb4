//! Every query parameter of the demo API with extreme values: each request
//! gets an answer (a `Status` for a refusal), none makes the server panic or
//! drop the connection, and the numbers a client cannot mean are a 400.

mod support;

use serde_json::json;
use std::time::Duration;
use watchlife_testkit::client::Client;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/pods";

/// The query parameters the API reads.
const PARAMETERS: [&str; 11] = [
    "timeoutSeconds",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "continue",
    "labelSelector",
    "fieldSelector",
    "watch",
    "allowWatchBookmarks",
    "gracePeriodSeconds",
    "sendInitialEvents",
];

/// Values at the edges of every type a parameter might be read as.
fn extreme_values() -> Vec<String> {
    let mut values: Vec<String> = [
        u64::MAX.to_string(),
        (u64::MAX as u128 + 1).to_string(),
        i64::MAX.to_string(),
        (i64::MAX as u64 + 1).to_string(),
        i64::MIN.to_string(),
        "-1".into(),
        "0".into(),
        "1e309".into(),
        "NaN".into(),
        "0x10".into(),
        "".into(),
        "%00".into(),
        "%FF%FE".into(),
        "%E2%80%AE".into(),
        "a%3D%3D%3Db".into(),
        "!%2C%2C!".into(),
        "in%20(".into(),
        "Exact".into(),
        "true".into(),
    ]
    .into_iter()
    .collect();
    // Long enough to matter, short enough to fit in a request head.
    values.push("9".repeat(4000));
    values.push("a".repeat(4000));
    values
}

/// Sends one request and reads its head; a watch's body is not waited for.
async fn answer(c: &Client, method: &str, path: &str) -> u16 {
    let response = tokio::time::timeout(
        Duration::from_secs(30),
        c.send(method, path, None, Vec::new(), None),
    )
    .await
    .unwrap_or_else(|_| panic!("no answer to {method} {path}"))
    .unwrap_or_else(|e| panic!("{method} {path} got no answer: {e}"));
    response.status().as_u16()
}

#[tokio::test]
async fn extreme_values_of_every_parameter_are_answered_never_a_panic() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    assert_eq!(
        c.post(CMS, &json!({"metadata": {"name": "c"}})).await.code,
        201
    );
    let targets = [
        ("GET", format!("{PODS}?")),
        ("GET", format!("{PODS}?watch=1&")),
        ("GET", format!("{CMS}?")),
        ("GET", format!("{CMS}/c?")),
        ("GET", format!("{CMS}/c?watch=true&")),
        (
            "GET",
            "/api/v1/watch/namespaces/default/configmaps?".to_string(),
        ),
        ("DELETE", format!("{CMS}/nothing-here?")),
    ];
    let mut asked = 0;
    for (method, target) in &targets {
        for parameter in PARAMETERS {
            for value in extreme_values() {
                let path = format!("{target}{parameter}={value}");
                let code = answer(&c, method, &path).await;
                assert!(
                    [200, 400, 404, 410, 422, 504].contains(&code),
                    "{method} {path}: {code}"
                );
                asked += 1;
            }
        }
    }
    assert!(asked > 1000);
    // Still serving, and the configmap is untouched.
    assert_eq!(c.get(&format!("{CMS}/c")).await.code, 200);
}

#[tokio::test]
async fn numbers_no_client_can_mean_are_a_400_naming_the_parameter() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let too_big = u64::MAX.to_string();
    for query in [
        format!("watch=1&timeoutSeconds={too_big}"),
        format!("timeoutSeconds={too_big}"),
        format!("limit={too_big}"),
        format!("resourceVersion={too_big}"),
        format!("watch=1&resourceVersion={too_big}"),
        "limit=-1".to_string(),
        "resourceVersion=-5".to_string(),
        "timeoutSeconds=1e9".to_string(),
    ] {
        let reply = c.get(&format!("{PODS}?{query}")).await;
        assert_eq!(reply.code, 400, "{query}: {}", reply.text);
        assert_eq!(reply.body["kind"], "Status");
        assert_eq!(reply.body["reason"], "BadRequest");
        let name = query.rsplit('&').next().unwrap().split('=').next().unwrap();
        let message = reply.body["message"].as_str().unwrap();
        assert!(
            message.contains(name) || message.contains("resource version"),
            "{query}: {message}"
        );
    }
    let grace = c
        .call(
            "DELETE",
            &format!("{CMS}/c?gracePeriodSeconds={too_big}"),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(grace.code, 400, "{}", grace.text);
}

#[tokio::test]
async fn the_longest_timeout_a_client_may_ask_starts_a_watch() {
    let server = support::start().await;
    let c = Client::new(&server.base, None);
    let path = format!("{PODS}?watch=1&timeoutSeconds={}", i64::MAX);
    let mut watch = c.stream(&path).await;
    server
        .cp
        .create(
            watchlife_controlplane::resource::PODS,
            json!({"metadata": {"name": "p"}}),
        )
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("an event in time")
        .expect("the stream goes on");
    assert_eq!(event["type"], "ADDED");
}
