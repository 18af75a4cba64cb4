//! What a docs page downloads for watchlife, gzipped, against its budgets:
//! the player (`player.js`, the replay page, its app and one scenario) ≤
//! 300 KB, and the in-page demo (`demo.html` and its app) ≤ 350 KB, as
//! `make embed` writes them.

use crate::report::Table;
use crate::stats::bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write as _;
use std::path::Path;

/// The player's budget, gzipped, with one scenario.
const PLAYER_BUDGET_BYTES: f64 = 300.0 * 1000.0;
/// The in-page demo's budget, gzipped.
const DEMO_BUDGET_BYTES: f64 = 350.0 * 1000.0;
/// The scenario counted with the player: the one a docs page shows first.
const SCENARIO: &str = "scenarios/pod-lifecycle.jsonl";

/// One thing a docs page embeds: what it is, its gzipped bytes, its budget.
pub struct Bundle {
    pub what: &'static str,
    pub gzipped: f64,
    pub budget: f64,
}

impl Bundle {
    pub fn over(&self) -> bool {
        self.gzipped > self.budget
    }
}

/// The player and the in-page demo as `dir` holds them; `None` when `dir`
/// has no `embed.html` (`make embed` not run).
pub fn measure(dir: &Path) -> Option<Vec<Bundle>> {
    let page = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let replay = page("embed.html")?;
    let mut player = vec![
        "embed.html".to_string(),
        "player.js".into(),
        SCENARIO.into(),
    ];
    player.extend(app_files(&replay, dir));
    let mut demo = vec!["demo.html".to_string()];
    demo.extend(app_files(&page("demo.html").unwrap_or_default(), dir));
    Some(vec![
        Bundle {
            what: "the player: `player.js`, `embed.html`, its app and one scenario",
            gzipped: gzipped_total(dir, &player),
            budget: PLAYER_BUDGET_BYTES,
        },
        Bundle {
            what: "the in-page demo: `demo.html` and its app",
            gzipped: gzipped_total(dir, &demo),
            budget: DEMO_BUDGET_BYTES,
        },
    ])
}

/// The app's files a page names (its JS and wasm), and the folder's CSS.
fn app_files(html: &str, dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = html
        .split(['"', '\'', ' ', '(', ')'])
        .filter(|word| {
            word.starts_with("./watchlife-frontend-") || word.starts_with("watchlife-frontend-")
        })
        .map(|word| word.trim_start_matches("./").to_string())
        .filter(|name| name.ends_with(".js") || name.ends_with(".wasm"))
        .collect();
    files.sort();
    files.dedup();
    let css = std::fs::read_dir(dir).into_iter().flatten().flatten();
    files.extend(
        css.map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|name| name.ends_with(".css")),
    );
    files
}

/// Each file gzipped at level 9 on its own, as a server sends it, summed.
fn gzipped_total(dir: &Path, files: &[String]) -> f64 {
    files
        .iter()
        .filter_map(|name| std::fs::read(dir.join(name)).ok())
        .map(|raw| {
            let mut encoder = GzEncoder::new(Vec::new(), Compression::best());
            encoder.write_all(&raw).expect("writing to memory");
            encoder.finish().expect("writing to memory").len() as f64
        })
        .sum()
}

/// A row per bundle: gzipped, budget, share, over or within.
pub fn table(bundles: &[Bundle]) -> Table {
    let mut table = Table::new(
        "What a docs page downloads (`make embed`'s folder)",
        &["embedded", "gzipped (level 9)", "budget", "of the budget"],
    );
    for b in bundles {
        table.row(vec![
            b.what.to_string(),
            bytes(b.gzipped),
            bytes(b.budget),
            format!(
                "{:.0}%{}",
                b.gzipped / b.budget * 100.0,
                if b.over() { " — **over budget**" } else { "" }
            ),
        ]);
    }
    table
}
