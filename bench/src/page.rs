//! The browser app's weight: what a browser downloads, gzipped, against the
//! budget of 350 KB for wasm, JS and CSS together.

use crate::report::{Report, Section, Table};
use crate::stats::bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

/// The page's budget, gzipped: wasm, JS and CSS together.
const BUDGET_BYTES: f64 = 350.0 * 1000.0;

pub fn run(report: &mut Report, dist: &Path) {
    let started = Instant::now();
    let Ok(entries) = std::fs::read_dir(dist) else {
        report.not_measured.push(format!(
            "**The browser app's weight**: `{}` does not exist (run `make frontend`).",
            dist.display()
        ));
        return;
    };
    let mut files: Vec<(String, &'static str, f64, f64)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let kind = kind_of(&name)?;
            let raw = std::fs::read(e.path()).ok()?;
            Some((name, kind, raw.len() as f64, gzipped(&raw) as f64))
        })
        .collect();
    files.sort_by(|a, b| b.3.total_cmp(&a.3));
    let mut table = Table::new("", &["file", "kind", "size", "gzipped (level 9)"]);
    let mut counted = 0.0;
    for (name, kind, raw, gz) in &files {
        if matches!(*kind, "wasm" | "JS" | "CSS") {
            counted += gz;
        }
        table.row(vec![
            format!("`{name}`"),
            kind.to_string(),
            bytes(*raw),
            bytes(*gz),
        ]);
    }
    table.row(vec![
        "**wasm + JS + CSS**".into(),
        String::new(),
        String::new(),
        format!(
            "**{} = {:.0}% of the 350 KB budget**",
            bytes(counted),
            counted / BUDGET_BYTES * 100.0
        ),
    ]);
    report.headline(
        "page: wasm + JS + CSS gzipped ÷ the 350 KB budget",
        format!(
            "{:.2} (one measurement: sizes do not vary)",
            counted / BUDGET_BYTES
        ),
    );
    report.sections.push(Section {
        title: "Browser app: page weight".into(),
        method: format!(
            "Every file in `{}` (built by `make frontend`: Trunk, release profile \
             `wasm-release`, wasm-opt), gzipped at level 9 in memory. The budget counts \
             wasm, JS and CSS; HTML and icons are listed for completeness. Sizes are \
             deterministic, so this is measured once.",
            dist.display()
        ),
        tables: vec![table],
        notes: vec![],
        summary: vec![format!(
            "wasm + JS + CSS gzipped: {} of 350 KB ({:.0}%)",
            bytes(counted),
            counted / BUDGET_BYTES * 100.0
        )],
        seconds: started.elapsed().as_secs_f64(),
    });
}

fn kind_of(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "wasm" => "wasm",
        "js" => "JS",
        "css" => "CSS",
        "html" => "HTML",
        "svg" | "png" | "ico" => "icon",
        _ => return None,
    })
}

fn gzipped(raw: &[u8]) -> usize {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(raw).expect("writing to memory");
    encoder.finish().expect("writing to memory").len()
}
