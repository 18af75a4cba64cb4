//! The Content-Security-Policy of the app, and the one change it needs in
//! the page Trunk builds.
//!
//! The policy allows scripts from the bridge itself and nothing inline:
//! `script-src 'self' 'wasm-unsafe-eval'` (the second is what compiling the
//! app's WebAssembly needs, and allows no JavaScript `eval`). Trunk ends
//! `index.html` with an inline `<script type="module">` that loads the app;
//! [`externalize_scripts`] moves it, unchanged, to a file of its own
//! (`/watchlife-boot-<hash>.js`), which the policy allows as `'self'`.
//!
//! Styles allow `'unsafe-inline'`: the app sets `style` attributes (row
//! heights of the virtualised log), which `'self'` alone would block, and a
//! style cannot run code.

use crate::downstream::access::AccessError;
use axum::http::HeaderValue;
use std::hash::{Hash, Hasher};

/// Start of the name of the script moved out of `index.html`.
pub const BOOT_PREFIX: &str = "watchlife-boot-";

/// The policy, with `frame_ancestors` (each `'self'`, `'none'` or an origin)
/// as the pages that may embed the app.
pub fn policy(frame_ancestors: &[String]) -> Result<HeaderValue, AccessError> {
    let ancestors = if frame_ancestors.is_empty() {
        vec!["'self'".to_string()]
    } else {
        frame_ancestors
            .iter()
            .map(|a| check_source(a))
            .collect::<Result<_, _>>()?
    };
    let policy = format!(
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
         form-action 'self'; frame-ancestors {}",
        ancestors.join(" ")
    );
    HeaderValue::from_str(&policy).map_err(|_| AccessError::BadFrameAncestor(policy))
}

/// One `--frame-ancestors` value: a keyword, or a scheme and host (with `*.`
/// and a port allowed), never anything that could end the directive.
fn check_source(source: &str) -> Result<String, AccessError> {
    let s = source.trim();
    let keyword = matches!(s, "'self'" | "'none'" | "self" | "none");
    if keyword {
        return Ok(format!("'{}'", s.trim_matches('\'')));
    }
    let ok = !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'/' | b'*' | b'[' | b']')
        })
        && (s.starts_with("https://") || s.starts_with("http://") || !s.contains('/'));
    if ok {
        Ok(s.to_string())
    } else {
        Err(AccessError::BadFrameAncestor(source.to_string()))
    }
}

/// A page whose inline scripts were moved out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Externalized {
    pub html: String,
    /// Path (without the leading `/`) and text of the moved script.
    pub script: Option<(String, String)>,
}

/// Moves the inline module scripts of `html` into one file, referenced by a
/// `<script type="module" src>` in the same place. Module scripts run in
/// order, so one file holding them all behaves as they did. Scripts with a
/// `src` are left alone; a page without inline scripts comes back as it was.
pub fn externalize_scripts(html: &str) -> Externalized {
    const OPEN: &str = "<script type=\"module\"";
    const CLOSE: &str = "</script>";
    let mut rest = html;
    let mut page = String::with_capacity(html.len());
    let mut scripts = Vec::new();
    let mut first_at = None;
    while let Some(start) = rest.find(OPEN) {
        let Some(tag_end) = rest[start..].find('>').map(|i| start + i) else {
            break;
        };
        let Some(close) = rest[tag_end..].find(CLOSE).map(|i| tag_end + i) else {
            break;
        };
        let tag = &rest[start..=tag_end];
        page.push_str(&rest[..start]);
        if tag.contains(" src=") {
            page.push_str(&rest[start..close + CLOSE.len()]);
        } else {
            first_at.get_or_insert(page.len());
            scripts.push(rest[tag_end + 1..close].to_string());
        }
        rest = &rest[close + CLOSE.len()..];
    }
    page.push_str(rest);
    let Some(at) = first_at else {
        return Externalized {
            html: html.to_string(),
            script: None,
        };
    };
    let js = scripts.join("\n");
    let mut hasher = std::hash::DefaultHasher::new();
    js.hash(&mut hasher);
    let path = format!("{BOOT_PREFIX}{:016x}.js", hasher.finish());
    page.insert_str(
        at,
        &format!("<script type=\"module\" src=\"/{path}\"></script>"),
    );
    Externalized {
        html: page,
        script: Some((path, js)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end of an `index.html` as Trunk 0.21 writes it.
    const TRUNK_PAGE: &str = r#"<html><head><link rel="modulepreload" href="/app-1.js" crossorigin=anonymous integrity="sha384-x"></head><body><noscript>js</noscript>
<script type="module">
import init, * as bindings from '/app-1.js';
const wasm = await init({ module_or_path: '/app-1_bg.wasm' });
window.wasmBindings = bindings;
dispatchEvent(new CustomEvent("TrunkApplicationStarted", {detail: {wasm}}));
</script></body></html>"#;

    #[test]
    fn trunks_inline_loader_moves_to_a_file_unchanged() {
        let out = externalize_scripts(TRUNK_PAGE);
        let (path, js) = out.script.expect("a script was moved");
        assert!(path.starts_with(BOOT_PREFIX) && path.ends_with(".js"));
        assert!(js.contains("import init, * as bindings from '/app-1.js';"));
        assert!(js.contains("TrunkApplicationStarted"));
        assert!(!out.html.contains("import init"));
        assert!(out.html.contains(&format!(
            "<script type=\"module\" src=\"/{path}\"></script></body>"
        )));
        assert!(out.html.contains("modulepreload"));
        // The same page gives the same name: caches stay valid across restarts.
        assert_eq!(externalize_scripts(TRUNK_PAGE).script.unwrap().0, path);
    }

    #[test]
    fn a_page_without_inline_scripts_is_left_alone() {
        let page = "<html><script type=\"module\" src=\"/a.js\"></script></html>";
        assert_eq!(
            externalize_scripts(page),
            Externalized {
                html: page.into(),
                script: None
            }
        );
    }

    #[test]
    fn the_policy_allows_no_inline_script_and_takes_frame_ancestors() {
        let p = policy(&[]).unwrap();
        let p = p.to_str().unwrap();
        assert!(p.contains("script-src 'self' 'wasm-unsafe-eval';"));
        assert!(!p.contains("script-src 'self' 'wasm-unsafe-eval' 'unsafe-inline'"));
        assert!(p.ends_with("frame-ancestors 'self'"));
        let p = policy(&["'self'".into(), "https://slides.example.com".into()]).unwrap();
        assert!(
            p.to_str()
                .unwrap()
                .ends_with("frame-ancestors 'self' https://slides.example.com")
        );
        assert!(
            policy(&["none".into()])
                .unwrap()
                .to_str()
                .unwrap()
                .ends_with("'none'")
        );
        assert!(policy(&["https://a; script-src *".into()]).is_err());
        assert!(policy(&["javascript:alert(1)".into()]).is_err());
    }
}
