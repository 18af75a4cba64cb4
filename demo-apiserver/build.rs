//! Reads Kubernetes' own schemas, as data, from the upstream v1.20.2 source
//! tree that `scripts/ensure-real-cluster.sh` unpacks from Debian's
//! `kubernetes` source package, and leaves in `OUT_DIR`:
//!
//! - `kube.fds`: a protobuf `FileDescriptorSet` compiled (with protox) from
//!   the tree's `generated.proto` files of the served groups and from
//!   gnostic's `OpenAPIv2.proto`, for the protobuf bodies (`src/protobuf.rs`)
//!   and the protobuf form of `/openapi/v2`;
//! - `swagger.json`: the tree's `api/openapi-spec/swagger.json` cut down to
//!   the paths the demo serves and the definitions they reach
//!   (`src/openapi.rs` serves it and derives the v3 documents from it).
//!
//! The tree is looked for in `$WATCHLIFE_KUBE_SOURCE`, else under
//! `${WATCHLIFE_CACHE:-$HOME/.cache/watchlife}`. Without it both files are
//! left empty, a warning says how to get the tree, and the server then
//! answers protobuf and OpenAPI requests with a Status that says the same.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where `ensure-real-cluster.sh` keeps the prepared source tree.
const TREE_UNDER_CACHE: &str = "kube-apiserver-v1.20.2/build/gopath/src/k8s.io/kubernetes";

/// The `generated.proto` files of the groups served, under `staging/src`
/// (their imports are found there too).
const PROTOS: [&str; 4] = [
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/api/apps/v1/generated.proto",
    "k8s.io/api/autoscaling/v1/generated.proto",
    "k8s.io/api/authorization/v1/generated.proto",
];

/// gnostic's OpenAPI v2 messages, under `vendor/`: kubectl reads
/// `/openapi/v2` in this form only.
const GNOSTIC: &str = "github.com/googleapis/gnostic/openapiv2/OpenAPIv2.proto";

/// The URL prefixes (group versions) of the served resources and, for each,
/// the resources served there. Kept equal to the crate's resource list by a
/// test (`openapi::tests`).
const SERVED: [(&str, &[&str]); 3] = [
    (
        "/api/v1/",
        &[
            "namespaces",
            "nodes",
            "pods",
            "configmaps",
            "secrets",
            "services",
            "events",
        ],
    ),
    ("/apis/apps/v1/", &["deployments", "replicasets"]),
    (
        "/apis/authorization.k8s.io/v1/",
        &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    ),
];

fn main() {
    for var in ["WATCHLIFE_KUBE_SOURCE", "WATCHLIFE_CACHE", "HOME"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let (fds, swagger) = match tree() {
        Some(tree) => {
            println!("cargo:rerun-if-changed={}", tree.display());
            (descriptors(&tree), served_swagger(&tree))
        }
        None => {
            // Cargo reruns this script when a watched folder's entries
            // change: watching the deepest part of the tree's path that
            // exists, the build that follows its unpacking picks it up.
            if let Some(existing) = tree_path().as_deref().and_then(deepest_existing) {
                println!("cargo:rerun-if-changed={}", existing.display());
            }
            println!(
                "cargo:warning=Kubernetes' v1.20.2 source tree was not found (run scripts/ensure-real-cluster.sh, or set WATCHLIFE_KUBE_SOURCE): the demo API is built without protobuf bodies and OpenAPI documents"
            );
            (Vec::new(), Vec::new())
        }
    };
    std::fs::write(out.join("kube.fds"), fds).expect("write kube.fds");
    std::fs::write(out.join("swagger.json"), swagger).expect("write swagger.json");
}

/// The source tree, when it is there (its OpenAPI document is the sign).
fn tree() -> Option<PathBuf> {
    let candidate = tree_path()?;
    candidate
        .join("api/openapi-spec/swagger.json")
        .is_file()
        .then_some(candidate)
}

/// `path` itself or its nearest ancestor that exists.
fn deepest_existing(path: &Path) -> Option<&Path> {
    path.ancestors().find(|p| p.is_dir())
}

/// Where the source tree is looked for.
fn tree_path() -> Option<PathBuf> {
    let candidate = match std::env::var_os("WATCHLIFE_KUBE_SOURCE") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let cache = std::env::var_os("WATCHLIFE_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/watchlife"))
                })?;
            cache.join(TREE_UNDER_CACHE)
        }
    };
    Some(candidate)
}

fn descriptors(tree: &Path) -> Vec<u8> {
    let staging = tree.join("staging/src");
    let vendor = tree.join("vendor");
    for file in PROTOS {
        println!("cargo:rerun-if-changed={}", staging.join(file).display());
    }
    let mut compiler = protox::Compiler::new([staging, vendor]).expect("proto include paths");
    compiler.include_imports(true);
    compiler
        .open_files(PROTOS.iter().copied().chain([GNOSTIC]))
        .unwrap_or_else(|e| panic!("compiling Kubernetes' protobuf files: {e}"));
    compiler.encode_file_descriptor_set()
}

/// Is `path` one the demo serves: a served resource of a served group
/// version, in a namespace or not, through the watch prefix or not?
fn served_path(path: &str) -> bool {
    SERVED.iter().any(|(prefix, plurals)| {
        let Some(rest) = path.strip_prefix(prefix) else {
            return false;
        };
        let rest = rest.strip_prefix("watch/").unwrap_or(rest);
        let rest = rest
            .strip_prefix("namespaces/{namespace}/")
            .filter(|r| !r.is_empty())
            .unwrap_or(rest);
        let plural = rest.split('/').next().unwrap_or("");
        plurals.contains(&plural)
            // `namespaces/{name}/finalize` and the like are not served.
            && !rest.ends_with("/finalize")
            && !rest.ends_with("/proxy")
            && !rest.contains("/proxy/")
            && !rest.ends_with("/log")
            && !rest.ends_with("/exec")
            && !rest.ends_with("/attach")
            && !rest.ends_with("/portforward")
            && !rest.ends_with("/binding")
            && !rest.ends_with("/eviction")
            && !rest.ends_with("/ephemeralcontainers")
    })
}

fn served_swagger(tree: &Path) -> Vec<u8> {
    let file = tree.join("api/openapi-spec/swagger.json");
    println!("cargo:rerun-if-changed={}", file.display());
    let text = std::fs::read(&file).expect("read swagger.json");
    let mut spec: serde_json::Value = serde_json::from_slice(&text).expect("swagger.json is JSON");
    let paths: serde_json::Map<String, serde_json::Value> = spec["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .filter(|(p, _)| served_path(p))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect();
    // Every definition the served paths reach, following references.
    let definitions = spec["definitions"]
        .as_object()
        .expect("definitions")
        .clone();
    let mut reached = BTreeSet::new();
    let mut todo: Vec<String> = Vec::new();
    refs(&serde_json::Value::Object(paths.clone()), &mut todo);
    refs(&spec["parameters"], &mut todo);
    while let Some(name) = todo.pop() {
        if reached.insert(name.clone())
            && let Some(def) = definitions.get(&name)
        {
            refs(def, &mut todo);
        }
    }
    let kept: BTreeMap<_, _> = definitions
        .into_iter()
        .filter(|(name, _)| reached.contains(name))
        .collect();
    spec["paths"] = serde_json::Value::Object(paths);
    spec["definitions"] = serde_json::to_value(kept).expect("definitions");
    serde_json::to_vec(&spec).expect("serialize swagger")
}

/// Pushes the definition names `value` refers to (`#/definitions/NAME`).
fn refs(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref"
                    && let Some(name) = v.as_str().and_then(|r| r.strip_prefix("#/definitions/"))
                {
                    out.push(name.to_string());
                }
                refs(v, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}
