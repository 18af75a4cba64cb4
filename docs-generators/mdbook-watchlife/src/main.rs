//! `mdbook-watchlife`, an mdBook preprocessor: each ```` ```watchlife ````
//! fenced block of a book becomes a `<watchlife-player>` (see
//! [`player_tag`] for what a block holds), and the player's files are
//! copied into the book. In `book.toml`:
//!
//! ```toml
//! [preprocessor.watchlife]
//! # The folder `make embed` writes, relative to the book's root.
//! player = "../watchlife/embed"
//! ```
//!
//! mdBook runs it as `mdbook-watchlife supports RENDERER` (only `html` is
//! supported: the player is a web page), then with `[context, book]` as
//! JSON on stdin, expecting the book back on stdout.

mod book;
mod fence;
mod player_files;
mod player_tag;

use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [supports, renderer] if supports == "supports" => {
            if renderer == "html" {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        [] => match preprocess() {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("mdbook-watchlife: {message}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!(
                "usage: mdbook-watchlife [supports RENDERER]\n\
                 (an mdBook preprocessor: add [preprocessor.watchlife] to book.toml)"
            );
            ExitCode::from(2)
        }
    }
}

/// Reads `[context, book]`, copies the player's files, writes the book with
/// its players.
fn preprocess() -> Result<(), String> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| format!("reading the book from mdBook: {e}"))?;
    let parsed: Value =
        serde_json::from_str(&input).map_err(|e| format!("mdBook's input is not JSON: {e}"))?;
    let [context, mut book]: [Value; 2] = serde_json::from_value(parsed)
        .map_err(|_| "mdBook's input is not [context, book]".to_string())?;
    let chapters = book::add_players(&mut book).map_err(|e| e.to_string())?;
    if chapters > 0 {
        let (from, to) = player_folders(&context)?;
        player_files::copy(&from, &to)
            .map_err(|e| format!("copying the player's files into the book: {e}"))?;
    }
    serde_json::to_writer(std::io::stdout().lock(), &book)
        .map_err(|e| format!("writing the book back to mdBook: {e}"))
}

/// Where the player's files are (`[preprocessor.watchlife] player`), and
/// where in the book's source folder they go.
fn player_folders(context: &Value) -> Result<(PathBuf, PathBuf), String> {
    let root = PathBuf::from(context["root"].as_str().unwrap_or("."));
    let config = &context["config"];
    let player = config["preprocessor"]["watchlife"]["player"]
        .as_str()
        .ok_or(
            "book.toml's [preprocessor.watchlife] has no `player` (the folder `make embed` writes)",
        )?;
    let src = config["book"]["src"].as_str().unwrap_or("src");
    Ok((root.join(player), root.join(src).join(book::PLAYER_DIR)))
}
