//! Finding ```` ```watchlife ```` blocks in a chapter's Markdown and putting
//! players in their place.
//!
//! A fence is three or more backticks or tildes, indented by at most three
//! spaces, as CommonMark has it; it closes with at least as many of the same
//! character. Blocks of other languages, and anything inside them (a
//! ```` ```watchlife ```` shown as an example in a longer fence, say), are
//! left as written.

use crate::player_tag::{self, BlockError};

/// The chapter's Markdown with every watchlife block replaced by its player,
/// and the player's script included once, before the first. `player_dir` is
/// the player's folder relative to the chapter's page. Unchanged (`None`)
/// when the chapter has no watchlife block.
pub fn replace_blocks(markdown: &str, player_dir: &str) -> Result<Option<String>, BlockError> {
    let mut out = String::with_capacity(markdown.len());
    let mut found = false;
    let mut open: Option<(Fence, bool, String)> = None;
    for line in markdown.split_inclusive('\n') {
        match &mut open {
            None => match Fence::opening(line) {
                Some((fence, info)) => {
                    let ours = info == "watchlife";
                    if !ours {
                        out.push_str(line);
                    }
                    open = Some((fence, ours, String::new()));
                }
                None => out.push_str(line),
            },
            Some((fence, ours, body)) => {
                if fence.closed_by(line) {
                    if *ours {
                        if !found {
                            out.push_str(&script(player_dir));
                            found = true;
                        }
                        out.push_str(&player_tag::render(body, player_dir)?);
                        out.push('\n');
                    } else {
                        out.push_str(line);
                    }
                    open = None;
                } else if *ours {
                    body.push_str(line);
                } else {
                    out.push_str(line);
                }
            }
        }
    }
    // A block left open runs to the end of the chapter, as in CommonMark.
    if let Some((_, true, body)) = open {
        if !found {
            out.push_str(&script(player_dir));
            found = true;
        }
        out.push_str(&player_tag::render(&body, player_dir)?);
    }
    Ok(found.then_some(out))
}

/// The tag that loads the player's script (once per page).
fn script(player_dir: &str) -> String {
    format!("<script src=\"{player_dir}/player.js\"></script>\n")
}

/// An open code fence: its character and length.
struct Fence {
    mark: char,
    len: usize,
}

impl Fence {
    /// The fence `line` opens, with its info string's first word.
    fn opening(line: &str) -> Option<(Fence, String)> {
        let rest = strip_indent(line)?;
        let mark = rest.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let len = rest.chars().take_while(|&c| c == mark).count();
        let info = rest[len..].trim();
        if len < 3 || (mark == '`' && info.contains('`')) {
            return None;
        }
        let word = info.split_whitespace().next().unwrap_or("").to_string();
        Some((Fence { mark, len }, word))
    }

    fn closed_by(&self, line: &str) -> bool {
        strip_indent(line).is_some_and(|rest| {
            let rest = rest.trim_end();
            rest.len() >= self.len && rest.chars().all(|c| c == self.mark)
        })
    }
}

/// `line` without up to three spaces of indent; `None` when indented more.
fn strip_indent(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    (line.len() - rest.len() <= 3).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_players_after_one_script_and_other_fences_stay() {
        let md = "# Informers\n\n```watchlife\nscale\n```\n\ntext\n\n~~~watchlife\nsrc: talk.jsonl\n~~~\n\n```rust\nlet x = 1;\n```\n";
        let out = replace_blocks(md, "../watchlife").unwrap().unwrap();
        assert_eq!(
            out.matches("<script src=\"../watchlife/player.js\"></script>")
                .count(),
            1
        );
        assert_eq!(out.matches("<watchlife-player").count(), 2);
        assert!(out.contains("<watchlife-player scenario=\"scale\">"));
        assert!(out.contains("<watchlife-player src=\"talk.jsonl\">"));
        assert!(out.contains("```rust\nlet x = 1;\n```\n"), "{out}");
        assert!(out.starts_with("# Informers\n\n<script"));
    }

    #[test]
    fn a_watchlife_block_shown_inside_a_longer_fence_is_left_as_an_example() {
        let md = "````markdown\n```watchlife\nscale\n```\n````\n";
        assert_eq!(replace_blocks(md, "w").unwrap(), None);
        let indented = "    ```watchlife\n    scale\n    ```\n";
        assert_eq!(
            replace_blocks(indented, "w").unwrap(),
            None,
            "an indented code block"
        );
    }

    #[test]
    fn a_chapter_without_blocks_is_unchanged_and_a_bad_block_is_an_error() {
        assert_eq!(replace_blocks("# Plain\n", "w").unwrap(), None);
        assert!(replace_blocks("```watchlife\nscale\nbogus: 1\n```\n", "w").is_err());
        let open = replace_blocks("text\n```watchlife\nscale\n", "w")
            .unwrap()
            .unwrap();
        assert!(
            open.contains("player.js") && open.contains("<watchlife-player scenario=\"scale\">")
        );
    }
}
