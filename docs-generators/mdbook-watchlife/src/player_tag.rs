//! A ```` ```watchlife ```` block's text as a `<watchlife-player>` element.
//!
//! The block holds one option per line, `name: value` or a bare `name` for
//! an option that is on or off; a first line that is a bare word not among
//! the options names the scenario. So
//!
//! ```text
//! pod-lifecycle
//! autoplay
//! markers: 1.5:the first LIST
//! ```
//!
//! becomes `<watchlife-player scenario="pod-lifecycle" autoplay
//! markers="1.5:the first LIST">`. The options are the element's attributes
//! (see `static/player.js`).

use thiserror::Error;

/// Every attribute `<watchlife-player>` reads.
pub const OPTIONS: [&str; 16] = [
    "scenario",
    "src",
    "demo",
    "autoplay",
    "loop",
    "speed",
    "animation",
    "start-at",
    "poster",
    "controls",
    "theme",
    "captions",
    "markers",
    "markers-src",
    "pause-at-markers",
    "title",
];

/// A line of a block that cannot be an option.
#[derive(Debug, Error, PartialEq)]
pub enum BlockError {
    #[error("unknown watchlife option `{name}` (line {line}); the options are: {}", OPTIONS.join(", "))]
    Unknown { name: String, line: usize },
    #[error("a watchlife block names no recording: give `scenario: NAME`, `src: URL` or `demo`")]
    NothingToPlay,
}

/// The element for one block, whose player's files are at `player_dir`
/// (relative to the page); inside it, for readers without scripts, a link
/// to the same replay.
pub fn render(block: &str, player_dir: &str) -> Result<String, BlockError> {
    let options = read(block)?;
    let playable = options
        .iter()
        .any(|(name, _)| matches!(name.as_str(), "scenario" | "src" | "demo"));
    if !playable {
        return Err(BlockError::NothingToPlay);
    }
    let attributes: String = options
        .iter()
        .map(|(name, value)| match value {
            Some(value) => format!(" {name}=\"{}\"", escape(value)),
            None => format!(" {name}"),
        })
        .collect();
    let fallback = match options.iter().find(|(name, _)| name == "scenario") {
        Some((_, Some(scenario))) => format!(
            "<a href=\"{player_dir}/embed.html?scenario={}\">watch the replay of {}</a>",
            escape(&query_escape(scenario)),
            escape(scenario)
        ),
        _ => "watchlife's player needs JavaScript".to_string(),
    };
    Ok(format!(
        "<watchlife-player{attributes}>{fallback}</watchlife-player>"
    ))
}

/// The block's options in order, as (name, value).
fn read(block: &str) -> Result<Vec<(String, Option<String>)>, BlockError> {
    let mut options = Vec::new();
    for (index, line) in block.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, value) = match line.split_once(':') {
            Some((name, value)) => (name.trim(), Some(value.trim().to_string())),
            None => (line, None),
        };
        if OPTIONS.contains(&name) {
            options.push((name.to_string(), value));
        } else if options.is_empty() && value.is_none() && !name.contains(char::is_whitespace) {
            options.push(("scenario".to_string(), Some(name.to_string())));
        } else {
            return Err(BlockError::Unknown {
                name: name.to_string(),
                line: index + 1,
            });
        }
    }
    Ok(options)
}

/// Text as an HTML attribute's value or an element's text.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A scenario's name as a URL query value (names are plain words; anything
/// else is percent-encoded).
fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_becomes_the_element_with_its_options_and_a_link_for_readers_without_scripts() {
        let html = render(
            "pod-lifecycle\nautoplay\n# a comment\nmarkers: 1.5:the \"first\" LIST\n",
            "../watchlife",
        )
        .unwrap();
        assert_eq!(
            html,
            "<watchlife-player scenario=\"pod-lifecycle\" autoplay markers=\"1.5:the &quot;first&quot; LIST\">\
             <a href=\"../watchlife/embed.html?scenario=pod-lifecycle\">watch the replay of pod-lifecycle</a>\
             </watchlife-player>"
        );
    }

    #[test]
    fn a_wrong_option_or_a_block_with_nothing_to_play_is_an_error_naming_it() {
        assert_eq!(
            render("scenario: scale\nautoplya", "w"),
            Err(BlockError::Unknown {
                name: "autoplya".into(),
                line: 2
            })
        );
        assert_eq!(render("autoplay", "w"), Err(BlockError::NothingToPlay));
        assert!(
            render("demo", "w")
                .unwrap()
                .starts_with("<watchlife-player demo>")
        );
    }
}
