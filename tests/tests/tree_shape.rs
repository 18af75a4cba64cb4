//! The shape ARCHITECTURE.md promises a newcomer, checked on the tree: no
//! function of the product longer than [`LONGEST_FUNCTION`] lines. Tests,
//! their support modules and `#[cfg(test)]` modules are not the product and
//! are not held to it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A function longer than this has more than one idea in it: a reader
/// cannot hold it on one screen.
const LONGEST_FUNCTION: usize = 80;

/// One function of a source text: its name, the line its `fn` stands on
/// (from 1), and how many lines it spans, its closing brace included.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// The source with every comment, string and character literal blanked
/// out (newlines kept, so line numbers stay), leaving only the code's own
/// braces.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    // Blanks `chars[from..to]`, keeping its newlines.
    let blank = |out: &mut String, from: usize, to: usize| {
        out.extend(
            chars[from..to]
                .iter()
                .map(|&c| if c == '\n' { '\n' } else { ' ' }),
        );
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let start = i;
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            let mut depth = 1;
            while i < chars.len() && depth > 0 {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 1;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 1;
                }
                i += 1;
            }
        } else if let Some(hashes) = raw_string_at(&chars, i) {
            // r"…", r#"…"#, br#"…"#: ends at a quote followed by as many #.
            i += chars[i..].iter().position(|&c| c == '"').unwrap_or(0) + 1;
            while i < chars.len()
                && !(chars[i] == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == '#')
                        .count()
                        == hashes)
            {
                i += 1;
            }
            i = (i + 1 + hashes).min(chars.len());
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && char_literal_end(&chars, i).is_some() {
            i = char_literal_end(&chars, i).unwrap_or(i + 1);
        } else {
            out.push(c);
            i += 1;
            continue;
        }
        let end = i.min(chars.len());
        blank(&mut out, start, end);
        i = end;
    }
    out
}

/// The number of `#` of a raw string literal starting at `i`, if one does.
fn raw_string_at(chars: &[char], i: usize) -> Option<usize> {
    let previous_is_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if previous_is_ident {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// Where the character literal starting at `i` ends (after its closing
/// quote); `None` for a lifetime (`'a`, `'static`).
fn char_literal_end(chars: &[char], i: usize) -> Option<usize> {
    match chars.get(i + 1)? {
        // An escape: the quote that closes it comes after the escaped
        // character ('\'', '\n', '\u{1F600}').
        '\\' => {
            let close = chars.get(i + 3..)?.iter().position(|&c| c == '\'')?;
            Some(i + 3 + close + 1)
        }
        _ => (chars.get(i + 2) == Some(&'\'')).then_some(i + 3),
    }
}

/// Every function with a body in `source`, outside `#[cfg(test)]` modules.
fn functions(source: &str) -> Vec<Function> {
    let code = code_only(source);
    let lines: Vec<&str> = code.lines().collect();
    // Everything from a `#[cfg(test)]` item on is test code: this tree keeps
    // its test modules last in a file.
    let end = lines
        .iter()
        .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
        .unwrap_or(lines.len());
    let mut found = Vec::new();
    for (i, line) in lines[..end].iter().enumerate() {
        let Some(name) = fn_name(line) else {
            continue;
        };
        let mut depth = 0_i64;
        let mut opened = false;
        for (j, rest) in lines[i..end].iter().enumerate() {
            let from = if j == 0 {
                line.find("fn ").unwrap_or(0)
            } else {
                0
            };
            for c in rest[from..].chars() {
                match c {
                    ';' if !opened => break,
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if !opened && rest[from..].contains(';') {
                break;
            }
            if opened && depth == 0 {
                found.push(Function {
                    name: name.to_string(),
                    line: i + 1,
                    lines: j + 1,
                });
                break;
            }
        }
    }
    found
}

/// The name of the function whose `fn` stands on `line`, if one does.
fn fn_name(line: &str) -> Option<&str> {
    let at = line.find("fn ")?;
    let before = line[..at].trim();
    let qualifiers = [
        "pub",
        "pub(crate)",
        "pub(super)",
        "async",
        "const",
        "unsafe",
        "extern",
    ];
    let only_qualifiers = before.is_empty()
        || before
            .split_whitespace()
            .all(|w| qualifiers.contains(&w) || w.starts_with("pub(") || w.starts_with('"'));
    if !only_qualifiers {
        return None;
    }
    let rest = &line[at + 3..];
    let name_end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (name_end > 0).then(|| &rest[..name_end])
}

/// The product's Rust files: tracked by git, outside tests and their
/// support, fuzzing and examples.
fn product_sources(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .args(["ls-files", "*.rs"])
        .current_dir(root)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|path| {
            let test_like = path.starts_with("tests/")
                || path.contains("/tests/")
                || path.ends_with("/tests.rs")
                || path.starts_with("fuzz")
                || path.contains("/fuzz/")
                || path.starts_with("examples/")
                || path.contains("/examples/")
                || path.starts_with("testkit/");
            !test_like
        })
        .map(|path| root.join(path))
        .collect()
}

#[test]
fn no_product_function_is_longer_than_the_limit() {
    let root = watchlife_tests::workspace();
    let sources = product_sources(&root);
    assert!(
        sources.len() > 100,
        "the product's sources were not found: {sources:?}"
    );
    let mut long = Vec::new();
    for path in &sources {
        let text = std::fs::read_to_string(path).expect("a tracked file reads");
        for f in functions(&text) {
            if f.lines > LONGEST_FUNCTION {
                let shown = path.strip_prefix(&root).unwrap_or(path).display();
                long.push(format!(
                    "{shown}:{} `{}` is {} lines",
                    f.line, f.name, f.lines
                ));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LONGEST_FUNCTION} lines (split them where their ideas part):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_scanner_sees_braces_of_code_only() {
    let source = r####"
pub async fn first(x: char) -> &'static str {
    let open = '{';
    let s = "}}} \" }";
    let raw = r#"}"# ;
    // }
    /* } /* } */ } */
    if x == '\'' { "a" } else { "b" }
}

trait T {
    fn declared(&self);
    fn defaulted(&self) {}
}

fn second<'a>(s: &'a str) -> &'a str {
    s
}

#[cfg(test)]
mod tests {
    fn not_product() {}
}
"####;
    assert_eq!(
        functions(source),
        vec![
            Function {
                name: "first".into(),
                line: 2,
                lines: 8
            },
            Function {
                name: "defaulted".into(),
                line: 13,
                lines: 1
            },
            Function {
                name: "second".into(),
                line: 16,
                lines: 3
            },
        ]
    );
    let long_one = format!(
        "fn long() {{\n{}}}\n",
        "    step();\n".repeat(LONGEST_FUNCTION)
    );
    assert_eq!(functions(&long_one)[0].lines, LONGEST_FUNCTION + 2);
}
