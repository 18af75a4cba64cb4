//! The player through docs generators' own ways, each building a real site
//! with two players on one page, served as a static host serves it:
//! - Hugo (Debian's `hugo`) with `docs-generators/hugo/` as a theme
//!   component: the first player a ```` ```watchlife ```` block (its render
//!   hook), the second the `watchlife` shortcode;
//! - MkDocs (PyPI's `mkdocs`, with `pymdown-extensions`' superfences as in
//!   `docs-generators/mkdocs/mkdocs.yml`): both players fenced blocks that
//!   `player.js` turns into players.
//!
//! Each page passes [`prove_two_players`] at 1280 px and
//! [`prove_fits_a_phone`] at 360 px. (mdBook's preprocessor is tested in its
//! own crate, `docs-generators/mdbook-watchlife/tests/`.) A wrong option in a
//! Hugo block fails the build, naming the page. Docusaurus is not installed:
//! its remark plugin is run by Node on the tree MDX would give it.

use std::path::Path;
use std::process::Command;
use watchlife_tests::browser::embed_folder;
use watchlife_tests::player_page::{
    Reader, first_player, open, player, prove_fits_a_phone, prove_two_players, second_player,
};
use watchlife_tests::static_files::{StaticFiles, copy_folder};

/// `lines` as a fenced ```` ```watchlife ```` block.
fn fenced(lines: &[String]) -> String {
    format!("```watchlife\n{}\n```\n", lines.join("\n"))
}

/// Runs a generator, failing with its output when it fails.
fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} cannot run: {e} (make test installs it)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    text
}

/// A Hugo site with one page, `content/informers.md` holding `body`.
fn hugo_site(body: &str) -> tempfile::TempDir {
    let site = tempfile::tempdir().expect("a temporary folder");
    let root = site.path();
    let theme = root.join("themes/watchlife");
    copy_folder(
        &watchlife_tests::workspace().join("docs-generators/hugo"),
        &theme,
    );
    copy_folder(&embed_folder(), &root.join("static/watchlife"));
    write(
        root,
        "hugo.toml",
        "baseURL = \"/\"\ndisableKinds = [\"taxonomy\", \"term\", \"RSS\", \"sitemap\", \"home\", \"section\"]\n\
         theme = [\"watchlife\"]\n",
    );
    write(
        root,
        "layouts/_default/single.html",
        "<!doctype html><html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\"><title>{{ .Title }}</title></head>\
         <body style=\"margin: 0 1rem\">{{ .Content }}</body></html>\n",
    );
    write(
        root,
        "content/informers.md",
        &format!("---\ntitle: Informers\n---\n# Informers\n\n{body}"),
    );
    site
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The two players on a page: proven at a desk's width and on a phone,
/// screenshots named after `generator`.
async fn prove_page(url: &str, folder: &str, generator: &str) {
    let browser = open(Reader::Desk, url).await;
    prove_two_players(&browser, folder).await;
    browser
        .eval(&format!("{}.scrollIntoView()", player(0)))
        .await;
    browser
        .screenshot_for_docs(&format!("player-{generator}-desk.png"))
        .await;
    browser.close().await;

    let phone = open(Reader::Phone, url).await;
    prove_fits_a_phone(&phone).await;
    phone
        .screenshot_for_docs(&format!("player-{generator}-phone.png"))
        .await;
    phone.close().await;
}

#[tokio::test]
async fn a_hugo_site_plays_a_fenced_block_and_a_shortcode() {
    let shortcode_options: String = second_player()
        .iter()
        .map(|line| match line.split_once(": ") {
            Some((name, value)) => format!(" {name}=\"{value}\""),
            None => format!(" {line}=\"true\""),
        })
        .collect();
    let site = hugo_site(&format!(
        "{}\nMuch more prose.\n\n{{{{< watchlife{shortcode_options} >}}}}\n",
        fenced(&first_player())
    ));
    run(Command::new("hugo")
        .arg("--quiet")
        .arg("--source")
        .arg(site.path()));
    let public = site.path().join("public");
    let page = std::fs::read_to_string(public.join("informers/index.html")).unwrap();
    assert!(
        page.contains("<a href=\"/watchlife/embed.html?scenario=pod-lifecycle\">"),
        "readers without scripts get a link to the replay: {page}"
    );
    let server = StaticFiles::serve_as_host(&public).await;
    prove_page(&server.url("informers/index.html"), &server.url(""), "hugo").await;
}

#[test]
fn a_wrong_option_in_a_hugo_block_fails_the_build_naming_the_page() {
    let site = hugo_site("```watchlife\nscenario: scale\nautoplya\n```\n");
    let output = Command::new("hugo")
        .arg("--source")
        .arg(site.path())
        .output()
        .expect("hugo runs");
    let text = String::from_utf8_lossy(&output.stderr) + String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "the build fails");
    assert!(
        text.contains("informers.md: unknown watchlife option \"autoplya\""),
        "{text}"
    );
}

#[tokio::test]
async fn an_mkdocs_site_plays_fenced_blocks_through_superfences() {
    let site = tempfile::tempdir().expect("a temporary folder");
    let root = site.path();
    let config = std::fs::read_to_string(
        watchlife_tests::workspace().join("docs-generators/mkdocs/mkdocs.yml"),
    )
    .expect("the MkDocs configuration");
    write(
        root,
        "mkdocs.yml",
        &format!(
            "site_name: Informers\nuse_directory_urls: false\n\
             theme:\n  name: mkdocs\n  highlightjs: false\n{config}"
        ),
    );
    copy_folder(&embed_folder(), &root.join("docs/watchlife"));
    write(
        root,
        "docs/index.md",
        &format!(
            "# Informers\n\n{}\nMuch more prose.\n\n{}",
            fenced(&first_player()),
            fenced(&second_player())
        ),
    );
    run(Command::new("python3")
        .args(["-m", "mkdocs", "build", "--quiet", "--config-file"])
        .arg(root.join("mkdocs.yml")));
    let server = StaticFiles::serve_as_host(&root.join("site")).await;
    prove_page(&server.url("index.html"), &server.url(""), "mkdocs").await;
}

/// Docusaurus itself is not installed here; its remark plugin is run by
/// Node on the tree MDX gives it, in a site folder that holds `make embed`'s
/// `player.js` where the README puts it: a block becomes the element, a
/// wrong option is an error naming the page and line.
#[test]
fn the_docusaurus_remark_plugin_turns_a_block_into_the_element() {
    let workspace = watchlife_tests::workspace();
    let plugin = workspace.join("docs-generators/docusaurus/remark-watchlife.js");
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(site.path().join("static/watchlife")).unwrap();
    std::fs::copy(
        workspace.join("static/player.js"),
        site.path().join("static/watchlife/player.js"),
    )
    .unwrap();
    let script = format!(
        "const plugin = require({plugin:?})();
         const block = (value) => ({{ type: 'root', children: [{{ type: 'code', lang: 'watchlife', value,
           position: {{ start: {{ line: 3 }} }} }}, {{ type: 'code', lang: 'rust', value: 'x' }}] }});
         const tree = block({first:?});
         plugin(tree, {{ path: 'informers.mdx' }});
         console.log(JSON.stringify(tree.children));
         try {{ plugin(block('scale\\nautoplya'), {{ path: 'informers.mdx' }}); }}
         catch (e) {{ console.log(e.message); }}",
        plugin = plugin.display().to_string(),
        first = first_player().join("\n"),
    );
    let output = run(Command::new("node")
        .arg("-e")
        .arg(script)
        .current_dir(site.path()));
    let mut lines = output.lines();
    let children: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(children[0]["name"], "watchlife-player");
    let attributes: Vec<(String, String)> = children[0]["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_string(),
                a["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        attributes,
        first_player()
            .iter()
            .map(|line| match line.split_once(": ") {
                Some((name, value)) => (name.to_string(), value.to_string()),
                None => (line.clone(), String::new()),
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(children[1]["lang"], "rust", "other blocks stay");
    assert_eq!(
        lines.next().unwrap(),
        "informers.mdx:3: unknown watchlife option \"autoplya\"; the options are: scenario, src, demo, \
         autoplay, loop, speed, animation, start-at, poster, controls, theme, captions, markers, \
         markers-src, pause-at-markers, title"
    );
}
