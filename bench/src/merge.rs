//! A run of some sections only (`--only`), merged into the report that an
//! earlier run wrote: the sections it measured replace theirs (a new one
//! goes before "Not measured yet"), its headline ratios replace the rows of
//! the same name (new ones are added at the end of the table), and the rest
//! of the page stays as it was. Each section it wrote says when, on what and
//! by which command it was measured, since the page's Machine table is the
//! earlier run's.

use crate::report::Report;

/// The heading of the section that new sections go before.
const NOT_MEASURED: &str = "## Not measured yet";
/// The heading of the table of ratios.
const HEADLINE: &str = "## Headline: ratios measured in the same run";

/// `earlier` (the markdown of an earlier run) with what `report` measured
/// put in; `command` is how this run was started.
pub fn merge(earlier: &str, report: &Report, command: &str) -> String {
    let mut chunks = split(earlier);
    if let Some(chunk) = chunks.iter_mut().find(|c| c.starts_with(HEADLINE)) {
        *chunk = merge_headlines(chunk, report);
    }
    let m = &report.machine;
    let busy = m
        .load_at_start
        .parse::<f64>()
        .is_ok_and(|load| load > m.cpus as f64);
    let stamp = format!(
        "_Measured {} with `{command}` on {} CPUs ({}, {}), load average {} when it \
         started{}, with the code of commit `{}`; this section's headline ratios come from \
         the same run._\n",
        m.date,
        m.cpus,
        m.cpu_model,
        m.memory,
        m.load_at_start,
        if busy {
            ": a busy machine, other work running beside the bench, so read the ratios \
             before the absolute times"
        } else {
            ""
        },
        m.commit
    );
    for section in &report.sections {
        let text = format!("{}\n{stamp}", section.markdown());
        let heading = format!("## {}\n", section.title);
        if let Some(chunk) = chunks.iter_mut().find(|c| c.starts_with(&heading)) {
            *chunk = text;
        } else {
            let at = chunks
                .iter()
                .position(|c| c.starts_with(NOT_MEASURED))
                .unwrap_or(chunks.len());
            chunks.insert(at, text);
        }
    }
    // Every chunk ends with one blank line before the next heading.
    let mut out = String::new();
    for chunk in chunks {
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(&chunk);
    }
    out
}

/// The page cut before each `## ` heading: the part before the first
/// heading, then one chunk per section, each beginning with its heading.
fn split(text: &str) -> Vec<String> {
    let mut chunks = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.starts_with("## ") {
            chunks.push(String::new());
        }
        chunks.last_mut().expect("never empty").push_str(line);
    }
    chunks.retain(|c| !c.is_empty());
    chunks
}

/// The headline chunk with the rows of `report`'s headlines replaced or added.
fn merge_headlines(chunk: &str, report: &Report) -> String {
    let mut lines: Vec<String> = chunk.lines().map(str::to_string).collect();
    for h in &report.headlines {
        let row = format!("| {} | {} |", h.what, h.value);
        let prefix = format!("| {} |", h.what);
        if let Some(line) = lines.iter_mut().find(|l| l.starts_with(&prefix)) {
            *line = row;
        } else if let Some(last) = lines.iter().rposition(|l| l.starts_with('|')) {
            lines.insert(last + 1, row);
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::report::Section;

    fn report(sections: Vec<Section>) -> Report {
        Report {
            machine: Machine {
                cpus: 2,
                cpu_model: "CPU".into(),
                memory: "1 GiB".into(),
                kernel: "k".into(),
                rustc: "r".into(),
                commit: "abc".into(),
                date: "2026-01-02T03:04:05Z".into(),
                load_at_start: "0.5".into(),
            },
            command: "make bench".into(),
            sections,
            headlines: Vec::new(),
            series: Vec::new(),
            not_measured: Vec::new(),
            plot_path: String::new(),
            total_seconds: 0.0,
        }
    }

    fn section(title: &str, method: &str) -> Section {
        Section {
            title: title.into(),
            method: method.into(),
            ..Section::default()
        }
    }

    const EARLIER: &str = "# Benchmarks\n\nintro\n\n## Headline: ratios measured in the same run\n\n| | median |\n| --- | --- |\n| a | 1× |\n| b | 2× |\n\n## One\n\nold one\n\n## Two\n\nold two\n\n## Not measured yet\n\n- x\n";

    #[test]
    fn replaces_a_measured_section_and_keeps_the_others() {
        let one = section("One", "new one");
        let merged = merge(EARLIER, &report(vec![one]), "bench --only one");
        assert!(merged.contains("## One\n\nnew one\n"));
        assert!(!merged.contains("old one"));
        assert!(merged.contains("## Two\n\nold two\n\n## Not measured yet"));
        assert!(merged.contains("with `bench --only one`"));
    }

    #[test]
    fn adds_a_new_section_before_not_measured_and_new_ratios_to_the_table() {
        let mut measured = report(vec![section("Three", "third")]);
        measured.headline("b", "3×");
        measured.headline("c", "4×");
        let merged = merge(EARLIER, &measured, "bench");
        assert!(merged.contains("| a | 1× |\n| b | 3× |\n| c | 4× |\n\n## One"));
        let three_at = merged.find("## Three").unwrap();
        assert!(merged.find("## Two").unwrap() < three_at);
        assert!(three_at < merged.find("## Not measured yet").unwrap());
    }
}
