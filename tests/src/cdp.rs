//! Chrome DevTools Protocol commands through chromedriver's own endpoint
//! (`goog/cdp/execute`), for what WebDriver cannot ask: a script that runs
//! before the page's own, or a CPU slowed as a phone's is.

use fantoccini::wd::WebDriverCompatibleCommand;

/// One DevTools command with its parameters.
#[derive(Debug)]
pub struct Cdp {
    pub cmd: String,
    pub params: serde_json::Value,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!(
            "session/{}/goog/cdp/execute",
            session.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (::http::Method, Option<String>) {
        let body = serde_json::json!({ "cmd": self.cmd, "params": self.params });
        (::http::Method::POST, Some(body.to_string()))
    }
}
