//! What others write to the bridge, fuzzed: a viewer's messages and
//! handshake headers, the command line, kubeconfigs and etcd's TLS files.
//! Every input ends in a value or a clear error (an `error` frame's code
//! and words, a flag error, a source error), never a panic; valid viewer
//! messages round-trip.
//!
//! Cases per property: `WATCHLIFE_FUZZ_CASES`, else `PROPTEST_CASES`, else
//! each property's own number (`make fuzz CASES=100000` sets the first).

use clap::Parser;
use proptest::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use watchlife::cli::{Args, Command};
use watchlife::downstream::access::Access;
use watchlife::downstream::viewer::{MAX_MESSAGE_BYTES, parse_message};
use watchlife::upstream::etcd::{EtcdAccess, EtcdStages};
use watchlife_controlplane::Clock;
use watchlife_fuzzkit::{config, mutated};
use watchlife_protocol::{ClientMessage, DemoAction, ErrorCode, Filter};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A file of its own under the temporary directory, with `bytes` in it.
fn file(name: &str, bytes: &[u8]) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("watchlife-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{name}", NEXT.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&path, bytes).unwrap();
    path
}

// ---------------------------------------------------------------------------
// A viewer's messages
// ---------------------------------------------------------------------------

/// A filter the bridge accepts.
fn good_filter() -> impl Strategy<Value = Filter> {
    (
        proptest::collection::vec("[a-z0-9][a-z0-9.-]{0,20}", 0..5),
        proptest::option::of("[a-z0-9][a-z0-9-]{0,20}"),
    )
        .prop_map(|(resources, namespace)| Filter {
            resources,
            namespace,
        })
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9-]{0,12}", "\\PC{0,30}"]
}

fn action() -> impl Strategy<Value = DemoAction> {
    prop_oneof![
        (text(), text(), any::<u32>()).prop_map(|(namespace, name, replicas)| {
            DemoAction::Scale {
                namespace,
                name,
                replicas,
            }
        }),
        (text(), text(), text(), text(), text()).prop_map(
            |(resource, namespace, name, key, value)| DemoAction::Label {
                resource,
                namespace,
                name,
                key,
                value,
            }
        ),
        (text(), text(), text()).prop_map(|(namespace, name, image)| DemoAction::SetImage {
            namespace,
            name,
            image
        }),
        (text(), text()).prop_map(|(namespace, name)| DemoAction::DeletePod { namespace, name }),
        Just(DemoAction::Compact),
        Just(DemoAction::DropWatches),
        Just(DemoAction::SlowWatcher),
    ]
}

/// A message the bridge accepts.
fn good_message() -> impl Strategy<Value = ClientMessage> {
    prop_oneof![
        good_filter().prop_map(|filter| ClientMessage::Subscribe { filter }),
        action().prop_map(|action| ClientMessage::Action { action }),
    ]
}

/// Any JSON, nested a little, with the message's own words among its keys
/// and strings.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let word = prop_oneof![
        proptest::sample::select(vec![
            "type",
            "subscribe",
            "action",
            "filter",
            "resources",
            "namespace",
            "kind",
            "scale",
            "label",
            "set_image",
            "delete_pod",
            "compact",
            "drop_watches",
            "slow_watcher",
            "replicas",
            "name",
            "key",
            "value",
            "image",
            "resource",
        ])
        .prop_map(String::from),
        "\\PC{0,10}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        word.clone().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((word.clone(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// The contract of a refusal: the code of its `error` frame, and words.
fn refused_clearly(text: &str) -> Result<(), TestCaseError> {
    if let Err(refused) = parse_message(text) {
        prop_assert!(
            matches!(refused.code, ErrorCode::Malformed | ErrorCode::TooLarge),
            "{:?}",
            refused
        );
        prop_assert!(!refused.message.is_empty());
        prop_assert_eq!(
            refused.code == ErrorCode::TooLarge,
            text.len() > MAX_MESSAGE_BYTES
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(5000))]

    #[test]
    fn any_text_is_a_message_or_a_clear_refusal(text in prop_oneof![
        "\\PC{0,200}",
        any::<String>(),
        json_value().prop_map(|v| v.to_string()),
        good_message().prop_flat_map(|m| mutated(serde_json::to_vec(&m).unwrap()))
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]) {
        refused_clearly(&text)?;
    }

    #[test]
    fn valid_messages_round_trip(message in good_message()) {
        let text = serde_json::to_string(&message).unwrap();
        prop_assert_eq!(parse_message(&text), Ok(message));
    }

    #[test]
    fn unknown_types_and_bad_filters_are_malformed(
        kind in "\\PC{0,20}",
        filter in prop_oneof![
            proptest::collection::vec("\\PC{0,300}", 1..70).prop_map(|resources| serde_json::json!({"resources": resources})),
            "\\PC{0,100}".prop_map(|ns| serde_json::json!({"namespace": ns})),
            json_value(),
        ],
    ) {
        if kind != "subscribe" && kind != "action" {
            let refused = parse_message(&serde_json::json!({"type": kind}).to_string()).unwrap_err();
            prop_assert_eq!(refused.code, ErrorCode::Malformed);
        }
        let text = serde_json::json!({"type": "subscribe", "filter": filter}).to_string();
        refused_clearly(&text)?;
        if let Ok(ClientMessage::Subscribe { filter }) = parse_message(&text) {
            // What passes is what a Kubernetes name could be.
            prop_assert!(filter.resources.len() <= 64);
            for r in filter.resources.iter().chain(&filter.namespace) {
                prop_assert!(!r.is_empty() && r.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.'));
            }
        }
    }

    #[test]
    fn oversized_messages_are_too_large(message in good_message(), pad in 0usize..1000) {
        let text = serde_json::to_string(&message).unwrap();
        let padded = format!("{text}{}", " ".repeat(MAX_MESSAGE_BYTES + 1 - text.len() + pad));
        prop_assert_eq!(parse_message(&padded).unwrap_err().code, ErrorCode::TooLarge);
    }

    /// The handshake's headers: token, Origin and Host, whatever they say.
    #[test]
    fn any_handshake_headers_are_let_in_or_refused_with_a_4xx(
        token in proptest::option::of("[!-~]{1,20}"),
        origins in proptest::collection::vec(prop_oneof!["https?://[a-z0-9.:\\[\\]-]{0,20}", "\\PC{0,20}"], 0..3),
        presented in proptest::option::of("\\PC{0,24}"),
        authorization in proptest::option::of(prop_oneof!["Bearer \\PC{0,20}", "\\PC{0,24}"]),
        origin in proptest::option::of(prop_oneof!["https?://[a-z0-9.:\\[\\]@/?#-]{0,24}", "\\PC{0,24}"]),
        host in proptest::option::of(prop_oneof!["[a-z0-9.:\\[\\]-]{0,24}", "\\PC{0,24}"]),
    ) {
        let listen = "127.0.0.1:8080".parse().unwrap();
        let Ok(access) = Access::new(listen, token, false, &origins) else {
            return Ok(());
        };
        for denied in [
            access.check_token(presented.as_deref(), authorization.as_deref()).err(),
            access.check_origin(origin.as_deref(), host.as_deref()).err(),
            access.check_host(host.as_deref()).err(),
        ]
        .into_iter()
        .flatten()
        {
            prop_assert!((400..500).contains(&denied.status), "{:?}", denied);
            prop_assert!(!denied.message.is_empty());
        }
    }
}

// ---------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------

/// The flags that take a value, and the switches.
const VALUED: [&str; 22] = [
    "--listen",
    "--token",
    "--allow-origin",
    "--frame-ancestors",
    "--max-viewers",
    "--demo-rate",
    "--demo-api",
    "--kubeconfig",
    "--context",
    "--resources",
    "--namespace",
    "--selector",
    "--etcd-endpoints",
    "--etcd-cacert",
    "--etcd-cert",
    "--etcd-key",
    "--resync",
    "--workers",
    "--min-watch-timeout",
    "--out",
    "--duration",
    "--scenario",
];
const SWITCHES: [&str; 6] = [
    "--demo",
    "--demo-idle",
    "--insecure-no-auth",
    "--gzip",
    "record",
    "--help",
];

/// A flag's value: numbers at every edge, durations, addresses, and
/// anything.
fn flag_value() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "0",
            "1",
            "-1",
            "1e-20",
            "1e-320",
            "5e-324",
            "1e308",
            "1e309",
            "inf",
            "-inf",
            "NaN",
            "0.0000001",
            "10000",
            "10000.0001",
            "18446744073709551616",
            "90",
            "500ms",
            "30s",
            "5m",
            "1h",
            "1.5h",
            ".s",
            "..",
            "1..2s",
            "99999999999h",
            "604800",
            "604801s",
            "0.001ms",
            "127.0.0.1:0",
            "0.0.0.0:8080",
            "[::1]:80",
            "[::]:1",
            "localhost:80",
            "'self'",
            "'none'",
            "https://a.example",
            "http://[::1]:8080",
            "http://x/y",
            "pod-lifecycle",
            "scale",
            "x.gz",
            "pods,,deployments.apps",
            "",
            ",",
            "=",
            "app=web,tier!=cache",
        ])
        .prop_map(String::from),
        any::<f64>().prop_map(|f| f.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        "[0-9.]{1,8}(ms|s|m|h|d|us|)",
        "\\PC{0,20}",
    ]
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    let arg = prop_oneof![
        6 => (proptest::sample::select(VALUED.to_vec()), flag_value(), any::<bool>()).prop_map(
            |(flag, value, joined)| if joined {
                vec![format!("{flag}={value}")]
            } else {
                vec![flag.to_string(), value]
            }
        ),
        2 => proptest::sample::select(SWITCHES.to_vec()).prop_map(|s| vec![s.to_string()]),
        1 => "\\PC{0,12}".prop_map(|s| vec![s]),
    ];
    proptest::collection::vec(arg, 0..6).prop_map(|args| {
        std::iter::once("watchlife".to_string())
            .chain(args.into_iter().flatten())
            .collect()
    })
}

/// What the bridge derives from its flags before it starts anything.
fn derive_everything(args: &Args) {
    let _ = args.demo_pace();
    let _ = args.reflector();
    let _ = watchlife::downstream::access::check_demo_api(args);
    let _ = watchlife::downstream::access::demo_api_token(args);
    let _ = watchlife::downstream::server::ServerConfig::from_args(args);
    if let Some(Command::Record(record)) = &args.command {
        let _ = record.gzipped();
        let _ = record.stop_after();
    }
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn any_command_line_is_read_or_refused_with_a_message(argv in argv()) {
        match Args::try_parse_from(&argv) {
            Ok(args) => derive_everything(&args),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn any_demo_rate_is_a_pace_or_refused(rate in prop_oneof![
        any::<f64>().prop_map(|f| f.to_string()),
        (0u32..400).prop_map(|e| format!("1e-{e}")),
        flag_value(),
    ]) {
        if let Ok(args) = Args::try_parse_from(["watchlife", "--demo-rate", &rate]) {
            let pace = args.demo_pace();
            prop_assert!(pace > std::time::Duration::ZERO, "{} gives {:?}", rate, pace);
        }
    }
}

// ---------------------------------------------------------------------------
// Kubeconfigs
// ---------------------------------------------------------------------------

/// A self-signed certificate (a throwaway, made for these tests), to
/// make well-formed certificate fields.
const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBhjCCAS2gAwIBAgIUGImrXJWX+wm4IgwpSwKxif+KWAswCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOd2F0Y2hsaWZlLWZ1enowHhcNMjYxMTIzMjA1NDEyWhcNMzYx
MTIwMjA1NDEyWjAZMRcwFQYDVQQDDA53YXRjaGxpZmUtZnV6ejBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABLGcpnfe/9O60E2m/GBkNFrSGjylQNADD6LW9U/cr7P7
hFqfcvzO0zjNhXN39k2qKydD7qWHarGzIkg3F89fmxCjUzBRMB0GA1UdDgQWBBRi
Ijk8FeXwpPdEr6qzkPbx07qrsTAfBgNVHSMEGDAWgBRiIjk8FeXwpPdEr6qzkPbx
07qrsTAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cAMEQCIAVwEGVY8reX
Yva3aMFvp2b384c8dUrkCAfdi1xefPOHAiAJX/1Ql4PyoH2k4Nq1/Zrtqsrr5+By
9lBFZbHhFk3zLw==
-----END CERTIFICATE-----
";

fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, &b| n << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A kubeconfig with these values in its fields.
fn kubeconfig(server: &str, ca: &str, token: &str, context: &str, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: u
  user:
    token: {token}
contexts:
- name: ctx
  context:
    cluster: c
    user: u
    namespace: {namespace}
current-context: {context}
"
    )
}

fn yaml_scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9:/.\\[\\]-]{0,30}",
        "\\PC{0,20}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        proptest::sample::select(vec![
            "https://127.0.0.1:6443",
            "http://127.0.0.1:1",
            "https://[::1]:6443",
            "https://",
            "http://:0",
            "unix:///x",
            "ftp://x",
            "https://a b",
            "~",
            "null",
            "[]",
            "{}",
            "''",
            "!!binary AAAA",
            // Tokens no HTTP header can carry (a line break, a NUL).
            "\"abc\\n\"",
            "\"tok\\u0000en\"",
            "\"\\t\\r\"",
            "&a x",
            "*a",
            "ctx",
            "other",
        ])
        .prop_map(String::from),
    ]
}

fn any_kubeconfig() -> impl Strategy<Value = Vec<u8>> {
    let ca = prop_oneof![
        Just(b64(CERT.as_bytes())),
        proptest::collection::vec(any::<u8>(), 0..64).prop_map(|b| b64(&b)),
        mutated(CERT.as_bytes().to_vec()).prop_map(|b| b64(&b)),
        yaml_scalar(),
    ];
    let filled = (
        yaml_scalar(),
        ca,
        yaml_scalar(),
        prop_oneof![Just("ctx".to_string()), yaml_scalar()],
        yaml_scalar(),
    )
        .prop_map(|(server, ca, token, context, ns)| {
            kubeconfig(&server, &ca, &token, &context, &ns).into_bytes()
        });
    let valid = kubeconfig(
        "http://127.0.0.1:1",
        &b64(CERT.as_bytes()),
        "abc",
        "ctx",
        "default",
    )
    .into_bytes();
    prop_oneof![
        4 => filled,
        4 => mutated(valid),
        1 => "[a-z:\\- \n{}\\[\\]&*!|>'\"#,?0-9]{0,200}".prop_map(String::into_bytes),
        1 => proptest::collection::vec(any::<u8>(), 0..200),
        // UTF-16, as some editors save files, with its byte order mark.
        1 => (any::<bool>(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(le, rest)| {
            let mut bytes = if le { vec![0xFF, 0xFE] } else { vec![0xFE, 0xFF] };
            bytes.extend(rest);
            bytes
        }),
    ]
}

proptest! {
    #![proptest_config(config(2000))]

    /// A kubeconfig given with `--kubeconfig` is used or refused with a
    /// message, however it is written (no exec plugin is ever named here:
    /// the strategies cannot write one).
    #[test]
    fn any_kubeconfig_is_used_or_refused_with_a_message(
        config in any_kubeconfig(),
        context in proptest::option::of(yaml_scalar()),
    ) {
        let path = file("kubeconfig", &config);
        let mut argv = vec!["watchlife".to_string(), "--kubeconfig".into(), path.display().to_string()];
        if let Some(c) = context {
            argv.extend(["--context".to_string(), c]);
        }
        let Ok(args) = Args::try_parse_from(&argv) else {
            let _ = std::fs::remove_file(&path);
            return Ok(());
        };
        // A runtime of its own, dropped with whatever the client spawned.
        let result = runtime().block_on(watchlife::upstream::source::cluster::connect(&args));
        let _ = std::fs::remove_file(&path);
        if let Err(e) = result {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

// ---------------------------------------------------------------------------
// etcd's TLS files
// ---------------------------------------------------------------------------

/// The key of [`CERT`], to make well-formed key files.
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgXRgbywEoYZACtm/T
69qFw7hhjBTnt6APwq0ClfNoJLmhRANCAASxnKZ33v/TutBNpvxgZDRa0ho8pUDQ
Aw+i1vVP3K+z+4Ran3L8ztM4zYVzd/ZNqisnQ+6lh2qxsyJINxfPX5sQ
-----END PRIVATE KEY-----
";

fn pem_file() -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(prop_oneof![
        Just(CERT.as_bytes().to_vec()),
        Just(KEY.as_bytes().to_vec()),
        mutated(CERT.as_bytes().to_vec()),
        mutated(KEY.as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 0..100),
        "-----BEGIN [A-Z ]{0,20}-----\n[A-Za-z0-9+/=\n]{0,80}\n-----END [A-Z ]{0,20}-----\n"
            .prop_map(String::into_bytes),
    ])
}

proptest! {
    #![proptest_config(config(2000))]

    /// `--etcd-cacert`, `--etcd-cert` and `--etcd-key` are read at start:
    /// any content is taken or refused with a message there.
    #[test]
    fn any_etcd_tls_files_are_taken_or_refused_with_a_message(
        ca in pem_file(),
        cert in pem_file(),
        key in pem_file(),
    ) {
        let paths: Vec<Option<PathBuf>> = [("ca", ca), ("cert", cert), ("key", key)]
            .into_iter()
            .map(|(name, bytes)| bytes.map(|b| file(name, &b)))
            .collect();
        let access = EtcdAccess {
            // Never dialled: the runtime is not run once the stages start.
            endpoints: vec!["http://127.0.0.1:1".into()],
            ca_cert: paths[0].clone(),
            client_cert: paths[1].clone(),
            client_key: paths[2].clone(),
        };
        // A runtime of its own: the watch the stages spawn goes with it.
        let result = runtime().block_on(async { EtcdStages::start(access, Clock::system()).map(|_| ()) });
        for path in paths.into_iter().flatten() {
            let _ = std::fs::remove_file(path);
        }
        if let Err(e) = result {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

// ---------------------------------------------------------------------------
// The valid inputs the mutations start from are valid
// ---------------------------------------------------------------------------

#[test]
fn the_kubeconfig_the_mutations_start_from_is_used() {
    let valid = kubeconfig(
        "http://127.0.0.1:1",
        &b64(CERT.as_bytes()),
        "abc",
        "ctx",
        "default",
    );
    let path = file("kubeconfig", valid.as_bytes());
    let args =
        Args::try_parse_from(["watchlife", "--kubeconfig", &path.display().to_string()]).unwrap();
    let result = runtime().block_on(watchlife::upstream::source::cluster::connect(&args));
    let _ = std::fs::remove_file(&path);
    let upstream = result.unwrap().unwrap();
    assert!(matches!(
        upstream.source,
        watchlife_protocol::Source::Cluster { .. }
    ));
}

#[test]
fn the_tls_files_the_mutations_start_from_are_taken() {
    let (ca, cert, key) = (
        file("ca", CERT.as_bytes()),
        file("cert", CERT.as_bytes()),
        file("key", KEY.as_bytes()),
    );
    let access = EtcdAccess {
        endpoints: vec!["https://127.0.0.1:1".into()],
        ca_cert: Some(ca.clone()),
        client_cert: Some(cert.clone()),
        client_key: Some(key.clone()),
    };
    let result =
        runtime().block_on(async { EtcdStages::start(access, Clock::system()).map(|_| ()) });
    for path in [ca, cert, key] {
        let _ = std::fs::remove_file(path);
    }
    result.unwrap();
}

/// kube's reader indexes past the end of a UTF-16 kubeconfig of an odd
/// length (found by the property above): such a file is refused first.
#[test]
fn an_odd_length_utf16_kubeconfig_is_refused_not_a_panic() {
    for bytes in [
        &b"\xff\xfe\x00"[..],
        b"\xfe\xff\x00\x00\x00",
        b"\xff\xfe\x00\x00\x00\x00\x00\x00\x00\x00\x00",
    ] {
        let path = file("kubeconfig", bytes);
        let args = Args::try_parse_from(["watchlife", "--kubeconfig", &path.display().to_string()])
            .unwrap();
        let result = runtime().block_on(watchlife::upstream::source::cluster::connect(&args));
        let _ = std::fs::remove_file(&path);
        let Err(e) = result else {
            panic!("{bytes:?} was taken");
        };
        assert!(e.to_string().contains("UTF-16"), "{e}");
    }
}
