//! Moments an author marks while recording (`watchlife record --marker`):
//! each line typed on standard input marks the moment it is entered, the
//! line its label. They are written beside the recording, `OUT.markers`,
//! one `SECONDS:LABEL` per line, the form the replay page's `markers=` and
//! `markers_src=` read; the file can be edited by hand afterwards.

use std::path::{Path, PathBuf};

/// The markers file of the recording at `out`: its name with `.markers`
/// added (`talk.jsonl.gz` → `talk.jsonl.gz.markers`).
pub fn beside(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".markers");
    PathBuf::from(name)
}

/// Marks typed so far, in order.
#[derive(Debug, Default)]
pub struct Marks {
    lines: Vec<String>,
}

impl Marks {
    /// Marks `t_ms` into the recording with `label` (trimmed; a `;`, which
    /// separates markers in an address, becomes `,`). An empty line marks
    /// the moment with no label.
    pub fn mark(&mut self, t_ms: u64, label: &str) {
        let label = label.trim().replace(';', ",");
        self.lines
            .push(format!("{}.{:03}:{label}", t_ms / 1000, t_ms % 1000));
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The file's text.
    pub fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_seconds_and_labels_one_per_line_beside_the_recording() {
        let mut marks = Marks::default();
        marks.mark(1_500, "  the first LIST ");
        marks.mark(12_034, "410; then a relist");
        marks.mark(20_000, "");
        assert_eq!(
            marks.text(),
            "1.500:the first LIST\n12.034:410, then a relist\n20.000:\n"
        );
        assert_eq!(
            beside(Path::new("/tmp/talk.jsonl.gz")),
            PathBuf::from("/tmp/talk.jsonl.gz.markers")
        );
    }
}
