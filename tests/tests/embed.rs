//! The static embed (`make embed`) served by a plain file server, with no
//! `watchlife` process: scenarios play, replays are deterministic, bad
//! recordings are named line by line, and a recording made in the live page
//! replays to the table the live page showed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use watchlife_protocol::{EventType, FrameBody, parse_recording};
use watchlife_tests::bridge::Bridge;
use watchlife_tests::browser::Browser;
use watchlife_tests::static_files::{StaticFiles, copy_folder};

/// The folder `make embed` writes.
fn embed_dir() -> PathBuf {
    watchlife_tests::browser::embed_folder()
}

/// A copy of the embed folder with more files beside it, served.
async fn serve_with(extra: &[(&str, &[u8])]) -> (tempfile::TempDir, StaticFiles) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    copy_folder(&embed_dir(), dir.path());
    for (name, content) in extra {
        std::fs::write(dir.path().join(name), content).expect("write a recording");
    }
    let server = StaticFiles::serve(dir.path()).await;
    (dir, server)
}

/// The object table as `resource key rv deleted` lines, sorted.
async fn object_table(browser: &Browser) -> Vec<String> {
    let rows = browser
        .eval(
            "[...document.querySelectorAll('tr.object-row')].map(r => [r.dataset.resource, r.dataset.key, \
             r.querySelector('.rv').textContent, r.dataset.deleted].join(' '))",
        )
        .await;
    let mut rows: Vec<String> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    rows.sort();
    rows
}

/// What the table must show at the end of a recording, worked out from the
/// file itself: the snapshot's objects, then every event in order.
fn expected_table(text: &str) -> Vec<String> {
    let recording = parse_recording(text).expect("a recording");
    let mut objects: BTreeMap<(String, String), (String, bool)> = BTreeMap::new();
    for f in &recording.frames {
        match &f.frame.body {
            FrameBody::Snapshot(s) => {
                objects.retain(|_, (_, deleted)| *deleted);
                for o in &s.objects {
                    objects.insert(
                        (o.target.resource.clone(), o.target.key()),
                        (o.resource_version.clone(), false),
                    );
                }
            }
            FrameBody::Event(e)
                if !matches!(e.event_type, EventType::Bookmark | EventType::Error) =>
            {
                objects.insert(
                    (e.target.resource.clone(), e.target.key()),
                    (
                        e.resource_version.clone(),
                        e.event_type == EventType::Deleted,
                    ),
                );
            }
            _ => {}
        }
    }
    let mut rows: Vec<String> = objects
        .into_iter()
        .map(|((r, k), (rv, deleted))| format!("{r} {k} {rv} {deleted}"))
        .collect();
    rows.sort();
    rows
}

/// A browser on the replay page at `query`, once its recording is loaded.
async fn open_replay(server: &StaticFiles, query: &str) -> Browser {
    Browser::open_replay(1280, 900, &server.url(&format!("embed.html?{query}"))).await
}

/// Plays to the end at the fastest speed.
async fn play_to_the_end(browser: &Browser) {
    browser.fill("#replay-rate", "4").await;
    browser
        .wait_until(
            "the replay ends",
            "document.querySelector('#replay-status[data-status=ended]')",
        )
        .await;
}

/// The numbers on every stage node, for comparing two replays.
async fn stage_numbers(browser: &Browser) -> serde_json::Value {
    browser
        .eval(
            "[...document.querySelectorAll('g.stage')].map(g => g.dataset.stage + ': ' + \
             [...g.querySelectorAll('.stage-rate, .stage-latency, .stage-depth')].map(t => t.textContent).join(' | '))",
        )
        .await
}

#[tokio::test]
async fn a_scenario_plays_from_a_static_folder_with_the_embed_options() {
    let dir = embed_dir();
    let server = StaticFiles::serve(&dir).await;
    let browser = Browser::open(
        900,
        700,
        &server.url("embed.html?scenario=scale&controls=minimal&theme=dark&captions=on"),
    )
    .await;
    browser
        .wait_until(
            "the page says it replays",
            "document.querySelector('#link[data-link=replay]')",
        )
        .await;
    // The log is below the fold of a 700-pixel frame, and a panel that
    // cannot be seen is not redrawn: scrolled to, it is.
    browser
        .eval("document.querySelector('.event-log').scrollIntoView() || true")
        .await;
    browser
        .wait_until(
            "events are listed",
            "document.querySelectorAll('tr.event-row').length >= 5",
        )
        .await;
    browser
        .wait_until(
            "a token travels",
            "document.querySelector('#pipeline [data-token]')",
        )
        .await;
    // The options: dark theme, minimal controls (no filters, no actions),
    // captions on, and no demo actions with no bridge to act.
    let root = browser
        .eval("[document.documentElement.dataset.theme, document.documentElement.dataset.controls]")
        .await;
    assert_eq!(root, serde_json::json!(["dark", "minimal"]));
    let filters = browser
        .eval("getComputedStyle(document.querySelector('.controls .filters')).display")
        .await;
    assert_eq!(filters, serde_json::json!("none"));
    let captions = browser
        .eval("document.querySelector('#captions').checked")
        .await;
    assert_eq!(captions, serde_json::json!(true));
    assert_eq!(
        browser
            .eval("!!document.querySelector('#action-scale, #action-label')")
            .await,
        serde_json::json!(false),
        "no demo actions in a replay"
    );
    play_to_the_end(&browser).await;
    let recorded = std::fs::read_to_string(dir.join("scenarios/scale.jsonl")).unwrap();
    assert_eq!(object_table(&browser).await, expected_table(&recorded));
    // Nothing but the folder's own files was asked for.
    let foreign = browser
        .eval(
            "performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin))",
        )
        .await;
    assert_eq!(foreign, serde_json::json!([]));
    browser.screenshot_for_docs("embed.png").await;
    browser.close().await;
}

#[tokio::test]
async fn replaying_a_recording_twice_ends_in_the_same_state() {
    let server = StaticFiles::serve(&embed_dir()).await;
    let browser = open_replay(&server, "scenario=compaction-relist").await;
    play_to_the_end(&browser).await;
    let table = object_table(&browser).await;
    let numbers = stage_numbers(&browser).await;
    assert!(!table.is_empty());
    // The compaction's 410 is marked on the timeline.
    browser.wait_for(".replay-marker.alarming").await;
    // Again, by playing from the start.
    browser.click("#replay-play").await;
    browser
        .wait_until(
            "the replay starts over",
            "document.querySelector('#replay-status[data-status=ready]')",
        )
        .await;
    play_to_the_end(&browser).await;
    assert_eq!(object_table(&browser).await, table);
    assert_eq!(stage_numbers(&browser).await, numbers);
    // And by scrubbing: back to the start, then straight to the end.
    browser.fill("#replay-timeline", "0").await;
    let early = object_table(&browser).await;
    assert_ne!(early, table, "the start of the recording is not its end");
    let end = browser
        .eval("document.querySelector('#replay-timeline').max")
        .await;
    browser
        .fill("#replay-timeline", end.as_str().unwrap())
        .await;
    browser
        .wait_until(
            "the scrub reaches the end",
            "document.querySelector('#replay-status[data-status=ended]')",
        )
        .await;
    assert_eq!(object_table(&browser).await, table);
    assert_eq!(stage_numbers(&browser).await, numbers);
    browser.close().await;
}

#[tokio::test]
async fn jumping_to_an_event_shows_the_moment_it_arrived() {
    let dir = embed_dir();
    let server = StaticFiles::serve(&dir).await;
    let browser = open_replay(&server, "scenario=pod-lifecycle&paused=1").await;
    // The first DELETED event in the file.
    let text = std::fs::read_to_string(dir.join("scenarios/pod-lifecycle.jsonl")).unwrap();
    let recording = parse_recording(&text).unwrap();
    let deleted = recording
        .frames
        .iter()
        .find_map(|f| match &f.frame.body {
            FrameBody::Event(e) if e.event_type == EventType::Deleted => {
                Some((f.frame.seq, e.clone()))
            }
            _ => None,
        })
        .expect("the pod lifecycle deletes a pod");
    browser.fill("#replay-seq", &deleted.0.to_string()).await;
    browser.click("#replay-jump").await;
    browser
        .wait_until(
            "the deleted pod is greyed in the table",
            &format!(
                "document.querySelector(\"tr.object-row[data-key='{}'][data-deleted=true]\")",
                deleted.1.target.key()
            ),
        )
        .await;
    let newest = browser
        .eval("Math.max(...[...document.querySelectorAll('tr.event-row')].map(r => Number(r.dataset.seq)))")
        .await;
    assert_eq!(
        newest.as_u64(),
        Some(deleted.0),
        "nothing after the event yet"
    );
    browser.close().await;
}

#[tokio::test]
async fn bad_recordings_are_named_line_by_line_and_what_can_play_plays() {
    let good = std::fs::read_to_string(embed_dir().join("scenarios/scale.jsonl")).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let truncated = &good[..good.len() - 40];
    let mut malformed = lines.clone();
    malformed[4] = "{\"t_ms\": oops";
    let malformed = malformed.join("\n") + "\n";
    // The header's format version, whatever it is, made one no page reads.
    let newer = {
        let (head, rest) = good
            .split_once("\"watchlife_recording\":")
            .expect("a recording starts with its header");
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        format!("{head}\"watchlife_recording\":99{}", &rest[digits..])
    };
    let (_dir, server) = serve_with(&[
        ("truncated.jsonl", truncated.as_bytes()),
        ("malformed.jsonl", malformed.as_bytes()),
        ("newer.jsonl", newer.as_bytes()),
        ("junk.jsonl", b"this is not a recording\n"),
    ])
    .await;
    let browser = Browser::start(1280, 900).await;
    let last_line = lines.len();
    for (file, line, words) in [
        ("truncated.jsonl", last_line, "truncated"),
        ("malformed.jsonl", 5, "not a frame"),
        ("newer.jsonl", 1, "newer than this page reads"),
    ] {
        browser
            .goto(&server.url(&format!("embed.html?replay={file}")))
            .await;
        browser
            .wait_until(
                &format!("{file}'s problem is listed"),
                &format!(
                    "[...document.querySelectorAll('#replay-problems li')].some(li => li.textContent.startsWith('line {line}:') && li.textContent.includes('{words}'))"
                ),
            )
            .await;
        // What can be read plays.
        play_to_the_end(&browser).await;
        assert!(
            !object_table(&browser).await.is_empty(),
            "{file}: the readable frames played"
        );
    }
    for (query, words) in [
        ("replay=junk.jsonl", "line 1: not a watchlife recording"),
        ("scenario=no-such-scenario", "HTTP 404"),
    ] {
        browser
            .goto(&server.url(&format!("embed.html?{query}")))
            .await;
        browser
            .wait_until(
                &format!("{query} is refused with a reason"),
                &format!("(document.querySelector('#replay-title')?.textContent || '').includes('{words}')"),
            )
            .await;
    }
    browser.close().await;
}

#[tokio::test]
async fn a_recording_of_the_live_demo_replays_to_the_table_the_live_page_showed() {
    // A still demo: nothing changes but what the test does, so the live
    // table can be read at a moment when it stands still.
    let api = format!("127.0.0.1:{}", watchlife_tests::free_port());
    let bridge = Bridge::start(&["--demo", "--demo-idle", "--demo-api", &api]).await;
    let browser = Browser::open_connected(1280, 900, &bridge.url()).await;
    // Catch the download: the page saves a blob through a link; keep the
    // blob's text (the page's security policy lets nothing fetch it back).
    browser
        .eval(
            "(() => { const make = URL.createObjectURL; URL.createObjectURL = function (blob) { \
               blob.text().then(t => { window.__recording = t; }); return make.call(URL, blob); }; \
               HTMLAnchorElement.prototype.click = function () {}; return true; })()",
        )
        .await;
    browser.click("#tape-record").await;
    browser
        .wait_until(
            "the recorder runs",
            "document.querySelector('#tape-record[aria-pressed=true]')",
        )
        .await;
    // A change made on the demo while recording: a new deployment.
    let manifest = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "taped", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "taped"}},
            "template": {
                "metadata": {"labels": {"app": "taped"}},
                "spec": {"containers": [{"name": "taped", "image": "nginx:1"}]}
            }
        }
    });
    let manifest_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(manifest_file.path(), manifest.to_string()).unwrap();
    let out = std::process::Command::new("kubectl")
        .args([
            "--server",
            &format!("http://{api}"),
            "create",
            "--validate=false",
            "-f",
        ])
        .arg(manifest_file.path())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    browser
        .wait_until(
            "the deployment's pods run",
            "[...document.querySelectorAll('tr.object-row[data-resource=pods]')].filter(r => r.dataset.key.startsWith('default/taped-')).length === 2",
        )
        .await;
    // Let the controllers finish (pods starting), then read the live table.
    let live = settled_table(&browser).await;
    browser.click("#tape-record").await;
    browser
        .wait_until(
            "the recording is saved",
            "typeof window.__recording === 'string'",
        )
        .await;
    let recording = browser.eval("window.__recording").await;
    let recording = recording.as_str().unwrap().to_string();
    assert!(parse_recording(&recording).unwrap().problems.is_empty());
    browser.close().await;
    let (_dir, server) = serve_with(&[("taped.jsonl", recording.as_bytes())]).await;
    let browser = open_replay(&server, "replay=taped.jsonl").await;
    play_to_the_end(&browser).await;
    assert_eq!(object_table(&browser).await, live);
    browser.close().await;
}

/// The object table once it has not changed for two seconds.
async fn settled_table(browser: &Browser) -> Vec<String> {
    let mut last = object_table(browser).await;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = object_table(browser).await;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the object table never stood still for two seconds: {last:?}");
}

#[tokio::test]
async fn a_gzipped_recording_opened_from_a_file_plays() {
    let dir = embed_dir();
    let scratch = tempfile::tempdir().unwrap();
    let gz = scratch.path().join("scale.jsonl.gz");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "gzip -c {} > {}",
            dir.join("scenarios/scale.jsonl").display(),
            gz.display()
        ))
        .status()
        .expect("gzip runs");
    assert!(out.success());
    let server = StaticFiles::serve(&dir).await;
    let browser = Browser::open(1280, 900, &server.url("embed.html")).await;
    browser
        .wait_until(
            "the page asks for a recording",
            "document.querySelector('#replay-title').textContent.includes('drop a recording')",
        )
        .await;
    // As a person choosing the file: WebDriver types its path into the input.
    browser
        .wait_for("#replay-file")
        .await
        .send_keys(gz.to_str().unwrap())
        .await
        .expect("choose the file");
    browser
        .wait_until(
            "the gzipped recording is read",
            "document.querySelector('#replay-status[data-status=ready]')",
        )
        .await;
    play_to_the_end(&browser).await;
    let recorded = std::fs::read_to_string(dir.join("scenarios/scale.jsonl")).unwrap();
    assert_eq!(object_table(&browser).await, expected_table(&recorded));
    browser.close().await;
}

/// Live pods in the object table.
async fn live_pods(browser: &Browser) -> usize {
    object_table(browser)
        .await
        .iter()
        .filter(|row| row.starts_with("pods ") && row.ends_with(" false"))
        .count()
}

#[tokio::test]
async fn the_interactive_embed_runs_the_control_plane_in_the_page() {
    let (_dir, server) = serve_with(&[]).await;
    let browser = Browser::open(1280, 900, &server.url("demo.html?controls=minimal")).await;
    browser
        .wait_until(
            "the page runs its own control plane",
            "document.querySelector('#link[data-link=\"in this page\"]') && \
             document.querySelector('.topbar').textContent.includes('measured by this browser')",
        )
        .await;
    // The story's deployment and its pods come from the control plane in the
    // page: listed and watched by the page's own Reflectors.
    browser
        .wait_until(
            "the story's deployment is there",
            "[...document.querySelectorAll('#action-deployment option')].some(o => o.value.endsWith('/web'))",
        )
        .await;
    browser
        .wait_until(
            "every Reflector is watching",
            "[...document.querySelectorAll('g.reflector')].length === 4",
        )
        .await;
    // Each Reflector's node says who answered its requests: its WATCH from
    // the LIST's revision, by the page's watch cache.
    browser
        .wait_until(
            "each Reflector says who answered it",
            "[...document.querySelectorAll('g.reflector')].every(g => g.textContent.includes('←'))",
        )
        .await;
    let before = live_pods(&browser).await;
    assert!(
        browser
            .eval("getComputedStyle(document.querySelector('.actions')).display !== 'none'")
            .await
            .as_bool()
            .unwrap_or(false),
        "minimal controls keep the in-page demo's actions"
    );

    // Scaling runs in the page: the deployment controller, the replicaset
    // controller, the scheduler and the kubelets make the pods, and each pod
    // arrives through the page's watch as events.
    let target = before + 4;
    browser.fill("#replicas", &target.to_string()).await;
    browser.click("#action-scale").await;
    browser
        .wait_until(
            "the scale is carried out",
            "(document.querySelector('#notice')?.textContent || '').includes('scaled deployment default/web')",
        )
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut now = live_pods(&browser).await;
    while now < target && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        now = live_pods(&browser).await;
    }
    assert!(
        now >= target,
        "scaled to {target}, the page shows {now} live pods (from {before})"
    );
    // Their events passed every stage, timed by the browser: each stage
    // shows a measured latency (the nodes' numbers refresh on a clock of
    // their own), the server-side ones as well as the informer's.
    browser
        .wait_until(
            "every stage after etcd shows a measured latency",
            "['watch_cache', 'watch_stream', 'reflector', 'fifo', 'reconcile'].every(stage => \
             /[0-9]/.test(document.querySelector(`g.stage[data-stage=${stage}] .stage-latency`)?.textContent || ''))",
        )
        .await;
    // The latencies this browser measures are often under its clock's tick
    // ("< 100 µs (clock tick)"): the plot's cells still keep to themselves.
    browser
        .wait_until(
            "the Reflector's histogram has samples",
            "Number(document.querySelector('#plot-latency .histogram[data-stage=reflector]')?.dataset.samples) > 0",
        )
        .await;
    browser.assert_no_overlap("#plot-latency text").await;
    browser.screenshot_for_docs("embed-demo.png").await;
    browser.close().await;
}
