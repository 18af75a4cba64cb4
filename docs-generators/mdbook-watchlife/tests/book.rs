//! `mdbook-watchlife` in a real book built by the real `mdbook` (installed
//! by `scripts/ensure-mdbook.sh`): a chapter one folder down with two
//! ```` ```watchlife ```` blocks becomes a page whose two players pass
//! [`prove_two_players`] at 1280 px and [`prove_fits_a_phone`] at 360 px,
//! with the player's files copied into the book by the preprocessor. A
//! wrong option fails the build, naming the chapter.

use std::path::Path;
use std::process::{Command, Output};
use watchlife_tests::browser::embed_folder;
use watchlife_tests::player_page::{
    Reader, first_player, open, player, prove_fits_a_phone, prove_two_players, second_player,
};
use watchlife_tests::static_files::StaticFiles;

/// A book whose chapter `guide/informers.md` is `chapter`.
fn book(chapter: &str) -> tempfile::TempDir {
    let book = tempfile::tempdir().expect("a temporary folder");
    let root = book.path();
    let toml = format!(
        "[book]\ntitle = \"Informers\"\n\n\
         [preprocessor.watchlife]\ncommand = {:?}\nplayer = {:?}\n\n\
         [output.html]\nno-section-label = true\n\n\
         # A Rust block would fetch the playground's crate list from play.rust-lang.org.\n\
         [output.html.playground]\nrunnable = false\n",
        env!("CARGO_BIN_EXE_mdbook-watchlife"),
        embed_folder().display().to_string(),
    );
    write(root, "book.toml", &toml);
    write(
        root,
        "src/SUMMARY.md",
        "# Summary\n\n- [Guide](guide/informers.md)\n",
    );
    write(root, "src/guide/informers.md", chapter);
    book
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn build(book: &Path) -> Output {
    Command::new(watchlife_tests::mdbook::binary())
        .arg("build")
        .arg(book)
        .output()
        .expect("mdbook runs")
}

fn fenced(lines: &[String]) -> String {
    format!("```watchlife\n{}\n```\n", lines.join("\n"))
}

#[tokio::test]
async fn a_books_fenced_blocks_become_players_that_play() {
    let book = book(&format!(
        "# Informers\n\n{}\nMuch more prose.\n\n```rust\nlet unchanged = true;\n```\n\n{}",
        fenced(&first_player()),
        fenced(&second_player())
    ));
    let output = build(book.path());
    assert!(
        output.status.success(),
        "mdbook build: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let built = book.path().join("book");
    assert!(
        built.join("watchlife/player.js").is_file() && built.join("watchlife/embed.html").is_file(),
        "the player's files are in the book"
    );
    let page = std::fs::read_to_string(built.join("guide/informers.html")).unwrap();
    assert!(
        page.contains("let unchanged = true;"),
        "other code blocks stay"
    );

    let server = StaticFiles::serve_as_host(&built).await;
    let url = server.url("guide/informers.html");
    let browser = open(Reader::Desk, &url).await;
    prove_two_players(&browser, &server.url("")).await;
    browser
        .eval(&format!("{}.scrollIntoView()", player(0)))
        .await;
    browser.screenshot_for_docs("player-mdbook-desk.png").await;
    browser.close().await;

    let phone = open(Reader::Phone, &url).await;
    prove_fits_a_phone(&phone).await;
    phone.screenshot_for_docs("player-mdbook-phone.png").await;
    phone.close().await;
}

#[test]
fn a_wrong_option_fails_the_build_naming_the_chapter() {
    let book = book("# Informers\n\n```watchlife\nscenario: scale\nautoplya\n```\n");
    let output = build(book.path());
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the build fails: {text}");
    assert!(
        text.contains("Guide (guide/informers.md): unknown watchlife option `autoplya` (line 2)"),
        "{text}"
    );
}
