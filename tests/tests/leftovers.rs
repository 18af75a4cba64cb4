//! `scripts/check-leftovers.sh`, which `make test` runs after the tests: it
//! names and kills a process a test left behind, and passes when there is
//! none.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A mark of this test's own, so that the check it runs sees only the
/// processes started here, not those of the `make test` around it.
fn mark() -> String {
    format!("leftovers-test-{}", std::process::id())
}

fn check(mark: &str) -> std::process::Output {
    Command::new(watchlife_tests::workspace().join("scripts/check-leftovers.sh"))
        .arg(mark)
        .env("WATCHLIFE_TEST_RUN", mark)
        .output()
        .expect("the check runs")
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        !s.lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
    })
}

#[test]
fn a_process_left_running_is_named_and_killed_and_then_the_check_passes() {
    let mark = mark();
    // `setsid`: a process of its own session, as one left by a test is
    // once its parent has gone.
    let mut orphan = Command::new("setsid")
        .args(["sleep", "300"])
        .env("WATCHLIFE_TEST_RUN", &mark)
        .stdout(Stdio::null())
        .spawn()
        .expect("setsid runs");
    let pid = orphan.id();

    let first = check(&mark);
    let said = String::from_utf8_lossy(&first.stderr);
    assert!(!first.status.success(), "a leftover fails the check");
    assert!(said.contains("sleep 300"), "and is named: {said}");

    let deadline = Instant::now() + Duration::from_secs(10);
    let _ = orphan.wait();
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(pid), "the leftover was killed");

    let second = check(&mark);
    assert!(
        second.status.success(),
        "nothing left: {}",
        String::from_utf8_lossy(&second.stderr)
    );
}

#[test]
fn the_check_does_not_count_itself_or_what_runs_it() {
    let mark = mark() + "-self";
    // The check runs under a shell that carries the mark, as under make.
    let out = Command::new("sh")
        .args(["-c", "\"$0\" \"$1\"; echo done"])
        .arg(watchlife_tests::workspace().join("scripts/check-leftovers.sh"))
        .arg(&mark)
        .env("WATCHLIFE_TEST_RUN", &mark)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("no process left behind"), "{said}");
}
