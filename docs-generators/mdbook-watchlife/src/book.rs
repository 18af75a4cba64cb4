//! The book as mdBook hands it over, walked as plain JSON: every chapter's
//! `content` gets its players, whatever else the book holds passes through.

use crate::fence;
use crate::player_tag::BlockError;
use serde_json::Value;

/// The folder the player's files are copied to, under the book's source
/// folder (and so, by mdBook, under the built book's root).
pub const PLAYER_DIR: &str = "watchlife";

/// A block that cannot be a player, with the chapter it is in.
#[derive(Debug, thiserror::Error)]
#[error("{chapter}: {error}")]
pub struct ChapterError {
    pub chapter: String,
    pub error: BlockError,
}

/// Replaces the watchlife blocks of every chapter of `book` (the second
/// element of mdBook's `[context, book]`); returns how many chapters have
/// players.
pub fn add_players(book: &mut Value) -> Result<usize, ChapterError> {
    let mut chapters = 0;
    if let Some(sections) = book.get_mut("sections").and_then(Value::as_array_mut) {
        for item in sections {
            chapters += add_to_item(item)?;
        }
    }
    Ok(chapters)
}

/// One item of a book's list (`{"Chapter": …}`, a separator, a part title),
/// its sub-chapters included.
fn add_to_item(item: &mut Value) -> Result<usize, ChapterError> {
    let Some(chapter) = item.get_mut("Chapter") else {
        return Ok(0);
    };
    let path = chapter
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = chapter
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("a chapter")
        .to_string();
    let mut chapters = 0;
    if let Some(Value::String(content)) = chapter.get_mut("content") {
        let replaced =
            fence::replace_blocks(content, &player_dir_from(&path)).map_err(|error| {
                ChapterError {
                    chapter: format!("{name} ({path})"),
                    error,
                }
            })?;
        if let Some(replaced) = replaced {
            *content = replaced;
            chapters += 1;
        }
    }
    if let Some(items) = chapter.get_mut("sub_items").and_then(Value::as_array_mut) {
        for item in items {
            chapters += add_to_item(item)?;
        }
    }
    Ok(chapters)
}

/// The player's folder as a link from the page of the chapter at `path`
/// (relative to the source folder: `guide/informers.md` is one folder down).
fn player_dir_from(path: &str) -> String {
    let depth = path.matches('/').count();
    format!("{}{PLAYER_DIR}", "../".repeat(depth))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chapter(path: &str, content: &str, sub_items: Value) -> Value {
        json!({"Chapter": {"name": path, "content": content, "number": [1], "sub_items": sub_items,
            "path": path, "source_path": path, "parent_names": []}})
    }

    #[test]
    fn every_chapter_gets_players_linked_from_its_own_folder_and_the_rest_passes_through() {
        let block = "```watchlife\nscale\n```\n";
        let mut book = json!({
            "sections": [
                chapter("intro.md", "# Intro\n", json!([])),
                "Separator",
                chapter("guide/index.md", block, json!([chapter("guide/deep/more.md", block, json!([]))])),
            ],
            "__non_exhaustive": null
        });
        assert_eq!(add_players(&mut book).unwrap(), 2);
        let guide = &book["sections"][2]["Chapter"];
        assert!(
            guide["content"]
                .as_str()
                .unwrap()
                .contains("src=\"../watchlife/player.js\"")
        );
        let deep = &guide["sub_items"][0]["Chapter"]["content"];
        assert!(
            deep.as_str()
                .unwrap()
                .contains("src=\"../../watchlife/player.js\"")
        );
        assert_eq!(book["sections"][0]["Chapter"]["content"], "# Intro\n");
        assert_eq!(book["sections"][1], "Separator");
        assert!(book.get("__non_exhaustive").is_some());
    }

    #[test]
    fn a_bad_block_names_its_chapter() {
        let mut book =
            json!({"sections": [chapter("a.md", "```watchlife\nautoplay\n```\n", json!([]))]});
        let error = add_players(&mut book).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("a.md (a.md): a watchlife block names no recording"),
            "{error}"
        );
    }
}
