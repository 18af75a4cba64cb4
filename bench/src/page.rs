//! The browser app's weight: what a browser downloads, gzipped, against the
//! budget of 350 KB for wasm, JS and CSS together; and what a docs page
//! downloads for the player and the in-page demo ([`embed_weight`]).

use crate::embed_weight::{self, Bundle};
use crate::report::{Report, Section, Table};
use crate::scenario::Scenario;
use crate::stats::bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write as _;
use std::path::PathBuf;

/// The page's budget, gzipped: wasm, JS and CSS together.
const BUDGET_BYTES: f64 = 350.0 * 1000.0;

/// The browser app as built, and `make embed`'s folder.
pub struct Config {
    pub dist: PathBuf,
    pub embed: PathBuf,
}

/// One file of the app: its name, kind, size and gzipped size.
pub struct File {
    name: String,
    kind: &'static str,
    raw: f64,
    gzipped: f64,
}

impl Scenario for Config {
    /// Every file, largest gzipped first (`None` when the folder does not
    /// exist), and the embedded bundles (`None` without `make embed`).
    type Figures = (Option<Vec<File>>, Option<Vec<Bundle>>);

    fn measure(&self) -> Self::Figures {
        (self.live_page(), embed_weight::measure(&self.embed))
    }

    fn report(&self, (files, bundles): Self::Figures, report: &mut Report, seconds: f64) {
        let mut tables = Vec::new();
        let mut summary = Vec::new();
        match files {
            Some(files) => {
                let (table, counted) = table(&files);
                report.headline(
                    "page: wasm + JS + CSS gzipped ÷ the 350 KB budget",
                    format!(
                        "{:.2} (one measurement: sizes do not vary)",
                        counted / BUDGET_BYTES
                    ),
                );
                tables.push(table);
                summary.push(format!(
                    "wasm + JS + CSS gzipped: {} of 350 KB ({:.0}%)",
                    bytes(counted),
                    counted / BUDGET_BYTES * 100.0
                ));
            }
            None => report.not_measured.push(format!(
                "**The browser app's weight**: `{}` does not exist (run `make frontend`).",
                self.dist.display()
            )),
        }
        match bundles {
            Some(bundles) => {
                for b in &bundles {
                    report.headline(
                        format!("embed: {} gzipped ÷ its budget", b.what),
                        format!(
                            "{:.2} (one measurement: sizes do not vary)",
                            b.gzipped / b.budget
                        ),
                    );
                    summary.push(format!(
                        "{}: {} of {} ({:.0}%){}",
                        b.what,
                        bytes(b.gzipped),
                        bytes(b.budget),
                        b.gzipped / b.budget * 100.0,
                        if b.over() { ", over budget" } else { "" }
                    ));
                }
                tables.push(embed_weight::table(&bundles));
            }
            None => report.not_measured.push(format!(
                "**The embed's weight**: `{}` has no `embed.html` (run `make embed`).",
                self.embed.display()
            )),
        }
        if tables.is_empty() {
            return;
        }
        report.sections.push(Section {
            title: "Browser app: page weight".into(),
            method: format!(
                "Every file in `{}` (built by `make frontend`: Trunk, release profile \
                 `wasm-release`, wasm-opt), gzipped at level 9 in memory. The budget counts \
                 wasm, JS and CSS; HTML and icons are listed for completeness. Then what a \
                 docs page downloads from `{}` (`make embed`), each file gzipped on its own. \
                 Sizes are deterministic, so this is measured once.",
                self.dist.display(),
                self.embed.display()
            ),
            tables,
            notes: vec![],
            summary,
            seconds,
        });
    }
}

impl Config {
    /// The live page's files, largest gzipped first; `None` when the folder
    /// does not exist.
    fn live_page(&self) -> Option<Vec<File>> {
        let entries = std::fs::read_dir(&self.dist).ok()?;
        let mut files: Vec<File> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let kind = kind_of(&name)?;
                let raw = std::fs::read(e.path()).ok()?;
                Some(File {
                    name,
                    kind,
                    raw: raw.len() as f64,
                    gzipped: gzipped(&raw) as f64,
                })
            })
            .collect();
        files.sort_by(|a, b| b.gzipped.total_cmp(&a.gzipped));
        Some(files)
    }
}

/// A row per file, then the budget's total; returns the table and that
/// total (gzipped bytes of wasm, JS and CSS).
fn table(files: &[File]) -> (Table, f64) {
    let mut table = Table::new("", &["file", "kind", "size", "gzipped (level 9)"]);
    let mut counted = 0.0;
    for f in files {
        if matches!(f.kind, "wasm" | "JS" | "CSS") {
            counted += f.gzipped;
        }
        table.row(vec![
            format!("`{}`", f.name),
            f.kind.to_string(),
            bytes(f.raw),
            bytes(f.gzipped),
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
    (table, counted)
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
