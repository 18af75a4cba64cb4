//! `watchlife record`: the frame stream written to a file — from the demo,
//! gzipped, and from a real kube-apiserver with Secrets redacted as live;
//! and a scenario recorded with the client settings it needs.

use base64::Engine;
use std::path::Path;
use std::process::{Command, Output};
use watchlife_protocol::{
    EventType, FrameBody, Recording, ReflectorState, ServerAnswer, Source, parse_recording,
};
use watchlife_tests::bridge::binary;
use watchlife_tests::real_cluster::RealCluster;

/// Runs `watchlife record ARGS` to the end.
async fn record(args: Vec<String>) -> Output {
    tokio::process::Command::new(binary())
        // The demo's kubeconfig goes to a scratch cache, not the user's.
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("watchlife-test-cache"),
        )
        .arg("record")
        .args(&args)
        .output()
        .await
        .expect("watchlife runs")
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn read(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("the recording exists");
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let out = Command::new("gzip")
            .args(["-dc"])
            .arg(path)
            .output()
            .expect("gzip runs");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    } else {
        String::from_utf8(bytes).unwrap()
    }
}

fn events(recording: &Recording) -> impl Iterator<Item = &watchlife_protocol::WatchEvent> {
    recording.frames.iter().filter_map(|f| match &f.frame.body {
        FrameBody::Event(e) => Some(e),
        _ => None,
    })
}

#[tokio::test]
async fn recording_the_demo_writes_a_header_the_hello_and_every_frame_gzipped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo.jsonl.gz");
    let done = record(owned(&[
        "--demo",
        "--demo-api",
        "127.0.0.1:0",
        "--demo-rate",
        "5",
        "--duration",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let text = read(&out);
    let recording = parse_recording(&text).expect("a recording");
    assert!(recording.problems.is_empty(), "{:?}", recording.problems);
    assert!(matches!(recording.header.source, Source::Demo { .. }));
    assert!(recording.header.resources.contains(&"pods".to_string()));
    assert!(matches!(
        recording.frames[0].frame.body,
        FrameBody::Hello(_)
    ));
    assert!(matches!(
        recording.frames[1].frame.body,
        FrameBody::Snapshot(_)
    ));
    // The whole life of the list-watch: the LIST, then the story's changes,
    // numbered in one stream and timed from the start.
    assert!(events(&recording).any(|e| e.initial || e.event_type == EventType::Added));
    assert!(events(&recording).any(|e| e.event_type == EventType::Modified));
    let seqs: Vec<u64> = recording.frames[2..].iter().map(|f| f.frame.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let last = recording.duration_ms();
    assert!(last > 1000 && last <= 5000, "{last} ms");
}

/// A LIST from "" that followed a paged relist answered 410 Gone, and who
/// answered it.
#[derive(Debug)]
struct ListAfterGone {
    resource: String,
    /// The relist's resourceVersion, refused as compacted.
    relisted_from: String,
    /// The page size of the relist, and of the LIST from "".
    limit: u64,
    answer: Option<ServerAnswer>,
}

/// Every LIST from "" of `recording` that a Reflector sent at once after its
/// paged LIST from a resourceVersion got 410 Gone, with the demo's answer
/// to its first page.
fn lists_after_gone(recording: &Recording) -> Vec<ListAfterGone> {
    use std::collections::HashMap;
    // Per resource: the last LIST from a resourceVersion and its page size,
    // then whether it got 410.
    let mut relist: HashMap<&str, (String, u64, bool)> = HashMap::new();
    let mut found: Vec<ListAfterGone> = Vec::new();
    let mut awaiting: HashMap<&str, usize> = HashMap::new();
    for f in &recording.frames {
        let FrameBody::Reflector(update) = &f.frame.body else {
            continue;
        };
        let resource = update.resource.as_str();
        match &update.state {
            ReflectorState::ListStarted {
                resource_version,
                limit,
            } if resource_version.is_empty() => {
                if let Some((from, relist_limit, true)) = relist.remove(resource) {
                    assert_eq!(*limit, relist_limit, "{resource}: the same page size");
                    awaiting.insert(resource, found.len());
                    found.push(ListAfterGone {
                        resource: resource.to_string(),
                        relisted_from: from,
                        limit: *limit,
                        answer: None,
                    });
                }
            }
            ReflectorState::ListStarted {
                resource_version,
                limit,
            } if resource_version != "0" => {
                relist.insert(resource, (resource_version.clone(), *limit, false));
            }
            ReflectorState::Gone { .. } => {
                if let Some(r) = relist.get_mut(resource) {
                    r.2 = true;
                }
            }
            ReflectorState::Answered { answer } => {
                if let Some(i) = awaiting.remove(resource) {
                    found[i].answer = Some(answer.clone());
                }
            }
            ReflectorState::WatchStarted { .. } | ReflectorState::ListStarted { .. } => {
                relist.remove(resource);
            }
            _ => {}
        }
    }
    found
}

/// Records `consistent-read` with `--kubernetes release` and returns the
/// recording.
async fn record_consistent_read(release: &str, dir: &Path) -> Recording {
    let out = dir.join(format!("consistent-read-{release}.jsonl"));
    let done = record(owned(&[
        "--kubernetes",
        release,
        "--scenario",
        "consistent-read",
        "--out",
        out.to_str().unwrap(),
    ]))
    .await;
    assert!(
        done.status.success(),
        "{release}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let recording = parse_recording(&read(&out)).expect("a recording");
    assert!(recording.problems.is_empty(), "{:?}", recording.problems);
    recording
}

fn hello_profile(recording: &Recording) -> &str {
    match &recording.frames[0].frame.body {
        FrameBody::Hello(h) => &h.kubernetes,
        other => panic!("the first frame is the hello: {other:?}"),
    }
}

#[tokio::test]
async fn consistent_read_lists_from_empty_after_a_paged_relist_is_gone_as_each_release_answers() {
    let dir = tempfile::tempdir().unwrap();
    let (modern, old) = tokio::join!(
        record_consistent_read("1.36", dir.path()),
        record_consistent_read("1.20", dir.path())
    );
    // The scenario's client settings, named by the Hello: 1.36's Reflectors
    // LIST instead of streaming; 1.20's always do.
    assert_eq!(hello_profile(&modern), "1.36 (WatchListClient=false)");
    assert_eq!(hello_profile(&old), "1.20");

    for (release, recording) in [("1.36", &modern), ("1.20", &old)] {
        let lists = lists_after_gone(recording);
        assert!(
            !lists.is_empty(),
            "{release}: a paged relist got 410 and the Reflector listed from \"\""
        );
        // The ConfigMap's Reflector last saw the ConfigMap's creation, long
        // compacted when its watch was dropped.
        assert!(
            lists.iter().any(|l| l.resource == "configmaps"),
            "{release}: {lists:?}"
        );
        for list in &lists {
            assert!(list.limit > 0, "{release}: {list:?} is paged");
            let Some(answer) = &list.answer else {
                panic!("{release}: {list:?} was answered");
            };
            match (release, answer) {
                (
                    "1.36",
                    ServerAnswer::ConsistentList {
                        asked,
                        store_revision,
                        revision,
                        ..
                    },
                ) => {
                    assert!(asked.is_empty(), "{list:?}");
                    let relisted_from: u64 = list.relisted_from.parse().unwrap();
                    // The store's revision, asked when the LIST came, is past
                    // the compaction that refused the relist; the answer is at
                    // least that fresh.
                    assert!(*store_revision > relisted_from, "{list:?}");
                    assert!(revision >= store_revision, "{list:?}");
                }
                ("1.20", ServerAnswer::ListFromEtcd { asked, .. }) => {
                    assert!(asked.is_empty(), "{list:?}");
                }
                _ => panic!("{release}: {list:?} answered otherwise"),
            }
        }
    }
}

#[tokio::test]
async fn bad_record_flags_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("no/such/folder/r.jsonl");
    for (args, words) in [
        (vec!["--duration", "0", "--out", "x.jsonl"], "above 0"),
        (vec!["--scenario", "nope", "--out", "x.jsonl"], "nope"),
        (
            vec![
                "--demo",
                "--demo-api",
                "127.0.0.1:0",
                "--out",
                nowhere.to_str().unwrap(),
            ],
            "cannot write the recording",
        ),
    ] {
        let done = record(owned(&args)).await;
        assert!(!done.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(stderr.contains(words), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn recording_a_real_cluster_redacts_secrets_as_the_live_stream_does() {
    let cluster = RealCluster::start().await;
    let kc = cluster.kubeconfig().to_str().unwrap().to_string();
    const VALUE: &str = "correct-horse-battery-staple";
    let kubectl = |args: &[&str]| {
        let out = Command::new("kubectl")
            .args(["--kubeconfig", &kc])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    kubectl(&[
        "create",
        "secret",
        "generic",
        "listed",
        &format!("--from-literal=password={VALUE}"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cluster.jsonl");
    let recorder = tokio::spawn(record(owned(&[
        "--kubernetes",
        "1.20",
        "--kubeconfig",
        &kc,
        "--resources",
        "secrets",
        "--namespace",
        "default",
        "--duration",
        "8",
        "--out",
        out.to_str().unwrap(),
    ])));
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    kubectl(&[
        "create",
        "secret",
        "generic",
        "watched",
        &format!("--from-literal=password={VALUE}"),
    ]);
    let done = recorder.await.unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let text = read(&out);
    let encoded = base64::engine::general_purpose::STANDARD.encode(VALUE);
    assert!(
        !text.contains(VALUE) && !text.contains(&encoded),
        "a Secret value was recorded"
    );
    let recording = parse_recording(&text).unwrap();
    assert!(matches!(recording.header.source, Source::Cluster { .. }));
    let names: Vec<&str> = events(&recording).map(|e| e.target.name.as_str()).collect();
    assert!(
        names.contains(&"listed") && names.contains(&"watched"),
        "{names:?}"
    );
    for e in events(&recording).filter(|e| e.target.kind == "Secret") {
        assert!(
            e.object.parse()["data"]["password"].is_string(),
            "the key stays, its value told as a size: {}",
            e.object
        );
    }
}

/// `--marker`: lines typed while recording mark their moments, written
/// beside the recording; the replay page (from a static folder) lists them
/// among its markers, with `markers_src=`.
#[tokio::test]
async fn moments_marked_while_recording_are_the_replays_markers() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    watchlife_tests::static_files::copy_folder(&watchlife_tests::browser::embed_folder(), &site);
    let out = site.join("talk.jsonl");
    let mut child = tokio::process::Command::new(binary())
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("watchlife-test-cache"),
        )
        .args(["record", "--scenario", "scale", "--marker", "--out"])
        .arg(&out)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("watchlife runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"the first LIST\n").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    stdin.write_all(b"scaled; then settled\n").await.unwrap();
    drop(stdin);
    let done = child.wait_with_output().await.unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(String::from_utf8_lossy(&done.stderr).contains("2 markers to"));
    let markers = std::fs::read_to_string(site.join("talk.jsonl.markers")).unwrap();
    let lines: Vec<(f64, &str)> = markers
        .lines()
        .map(|l| {
            let (t, label) = l.split_once(':').unwrap();
            (t.parse().unwrap(), label)
        })
        .collect();
    assert_eq!(lines.len(), 2, "{markers}");
    assert_eq!(lines[0].1, "the first LIST");
    assert_eq!(
        lines[1].1, "scaled, then settled",
        "a `;` would split a marker"
    );
    assert!(
        lines[1].0 - lines[0].0 >= 1.4,
        "each marks the moment it was typed: {markers}"
    );

    let server = watchlife_tests::static_files::StaticFiles::serve(&site).await;
    let browser = watchlife_tests::browser::Browser::open_replay(
        1280,
        900,
        &server.url("embed.html?replay=talk.jsonl&markers_src=talk.jsonl.markers&paused=1"),
    )
    .await;
    let options = browser
        .eval("[...document.querySelectorAll('#replay-markers option')].map(o => o.textContent).join('|')")
        .await;
    let options = options.as_str().unwrap();
    for (_, label) in &lines {
        assert!(options.contains(label), "{label} is a marker: {options}");
    }
    browser.close().await;
}
