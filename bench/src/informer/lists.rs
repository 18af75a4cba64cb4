//! LISTs per fault, watchlife beside client-go v1.20.2: the differential
//! tests (`tests/tests/differential_client_go.rs`) run as they are, with
//! [`list_counts::ENV`] set so that each prints its sides' LIST counts;
//! this reads those lines back. The harness, the faults and the client-go
//! reference are the tests' own: nothing is duplicated here.

use std::path::Path;
use std::process::{Command, Stdio};
use watchlife_tests::differential::list_counts::{self, ListCounts};

/// The test target holding the faults.
const TEST_TARGET: &str = "differential_client_go";

/// What the differential tests reported.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One per test that reached its comparison, in the order they finished.
    pub faults: Vec<ListCounts>,
    /// Why some or all are missing, when they are.
    pub failure: Option<String>,
}

/// Builds (when needed) and runs the differential tests in release mode
/// against the `watchlife` binary at `watchlife`. Each test starts its own
/// etcd and kube-apiserver; the tests run as many at once as the test
/// harness chooses, as `make test` runs them.
pub fn run(watchlife: &Path) -> Outcome {
    let watchlife = match watchlife.canonicalize() {
        Ok(path) => path,
        Err(e) => {
            return Outcome {
                failure: Some(format!(
                    "no `watchlife` binary at {}: {e}",
                    watchlife.display()
                )),
                ..Outcome::default()
            };
        }
    };
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new("cargo")
        .current_dir(&workspace)
        .args(["test", "--release", "-p", "watchlife-tests", "--test"])
        .arg(TEST_TARGET)
        .args(["--", "--nocapture"])
        .env(list_counts::ENV, "1")
        .env("WATCHLIFE_BIN", &watchlife)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => {
            return Outcome {
                failure: Some(format!("`cargo test` could not start: {e}")),
                ..Outcome::default()
            };
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let faults: Vec<ListCounts> = stdout.lines().filter_map(ListCounts::parse).collect();
    let failure = (!output.status.success()).then(|| {
        let failed: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("test ")?.strip_suffix(" ... FAILED"))
            .collect();
        format!(
            "`cargo test --release -p watchlife-tests --test {TEST_TARGET}` failed ({}){}",
            output.status,
            if failed.is_empty() {
                String::new()
            } else {
                format!(": {}", failed.join(", "))
            }
        )
    });
    Outcome { faults, failure }
}
