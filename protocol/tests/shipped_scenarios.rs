//! Every scenario shipped in `static/scenarios` plays: recordings made in an
//! older format are read through the protocol-1 converter, whole.

use std::path::PathBuf;
use watchlife_protocol::{FrameBody, parse_recording};

fn scenarios() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../static/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_scenario_plays_whole() {
    let files = scenarios();
    assert!(files.len() >= 6, "the scenarios are shipped: {files:?}");
    for file in files {
        let name = file.display();
        let text = std::fs::read_to_string(&file).expect("a scenario reads");
        let recording = parse_recording(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            recording.problems.is_empty(),
            "{name}: {:?}",
            recording.problems
        );
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(
            recording.frames.len(),
            lines - 1,
            "{name}: every frame read"
        );
        let mut events = 0;
        for f in &recording.frames {
            match &f.frame.body {
                FrameBody::Snapshot(s) => {
                    assert!(
                        s.objects.iter().all(|o| o.object.is_some()),
                        "{name}: a recording's snapshot keeps its bodies"
                    );
                }
                FrameBody::Event(e) if !e.target.name.is_empty() => {
                    events += 1;
                    let body = e.object.parse();
                    assert_eq!(
                        body["metadata"]["name"], e.target.name,
                        "{name}: the event's body is its object's"
                    );
                }
                _ => {}
            }
        }
        assert!(events > 10, "{name}: {events} events");
    }
}
