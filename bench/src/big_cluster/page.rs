//! The app in headless Chromium over the big cluster: when it is ready, its
//! frame rate, and its renderers' memory.

use super::report::megabytes;
use super::{Figures, TIMEOUT};
use crate::browser::Driver;
use crate::machine::renderers;
use crate::process::Watchlife;
use crate::stats::micros;
use std::time::{Duration, Instant};

/// The app in headless Chromium.
pub struct Page {
    driver: Driver,
    client: fantoccini::Client,
}

impl Page {
    /// Opens the app, waits until it is ready, and notes the time and the
    /// renderer's memory in `f`.
    pub async fn open(bridge: &Watchlife, listed: usize, f: &mut Figures) -> Result<Page, String> {
        let driver = Driver::start()?;
        let client = driver.session().await?;
        let page = Page { driver, client };
        let t0 = Instant::now();
        page.client
            .goto(&format!("http://{}/", bridge.addr))
            .await
            .map_err(|e| format!("opening the app: {e}"))?;
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let state = page
                .client
                .execute(
                    "const s = document.querySelector('section.objects'); \
                     return [!!document.querySelector('#link[data-link=connected]'), \
                       s ? Number(s.dataset.objects) : -1];",
                    vec![],
                )
                .await
                .map_err(|e| e.to_string())?;
            let connected = state[0].as_bool() == Some(true);
            let objects = state[1].as_f64().unwrap_or(-1.0);
            if connected && objects >= listed as f64 {
                f.page_ready = Some(t0.elapsed());
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not ready in {} s (connected: {connected}, objects: {objects})",
                    TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let renderers = renderers(page.driver.pid());
        progress!(
            "big cluster: page ready after {}, {} renderer(s), {} in all, the tab's {}",
            micros(f.page_ready.unwrap_or_default().as_secs_f64() * 1e6),
            renderers.processes,
            megabytes(renderers.rss),
            megabytes(renderers.tab_rss)
        );
        f.renderer = Some(renderers);
        Ok(page)
    }

    /// `requestAnimationFrame` callbacks per second over `length`.
    pub async fn fps(&self, length: Duration) -> Result<f64, String> {
        let counted = self
            .client
            .execute_async(
                &format!(
                    "const done = arguments[arguments.length - 1]; \
                     const start = performance.now(); let frames = 0; \
                     function tick(t) {{ frames++; \
                       if (t - start < {}) requestAnimationFrame(tick); \
                       else done([frames, t - start]); }} \
                     requestAnimationFrame(tick);",
                    length.as_millis()
                ),
                vec![],
            )
            .await
            .map_err(|e| e.to_string())?;
        let v = |i: usize| counted.get(i).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
        Ok(v(0) / v(1) * 1000.0)
    }

    pub async fn close(self) {
        let _ = self.client.close().await;
    }
}
