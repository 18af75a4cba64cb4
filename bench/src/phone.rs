//! The page as an audience's phone runs it: 360×800 CSS pixels, a mobile
//! viewport, and a CPU a quarter as fast as a desktop's (DevTools' CPU
//! throttling), at the default speed a shared link opens with. Frames per
//! second while the page receives 100 and 1,000 events a second, first
//! paint, and the tab's memory over [`Config::soak`] of the busier story.
//!
//! DevTools slows the page relative to the machine it runs on, so "this
//! machine ÷4" is a slower phone on a slower machine. The section therefore
//! opens two phones: the same phone on every machine (the throttling rate
//! scaled by this machine's single-core speed against the reference
//! desktop's, [`DESKTOP_PARSE_PER_SECOND`]), and this machine ÷4 as
//! DevTools' preset has it.
//!
//! The demo's rate for each number of events is chosen as the browser
//! section chooses it ([`crate::browser::calibrate`]). The page is opened in
//! a fresh headless Chromium each time; the device and the throttling are set
//! before it loads, so first paint is the throttled one.

use crate::browser::{
    Driver, Figures, FramesHeaders, Measured, calibrate, cdp, frames_table, measure_page,
    wait_connected,
};
use crate::machine::renderers;
use crate::process::Watchlife;
use crate::report::{Report, Section, Table};
use crate::scenario::{Scenario, stopped_early};
use crate::stats::{bytes, micros, num};
use fantoccini::Client;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The phone's screen, in CSS pixels: the narrowest common one.
const SCREEN: (u32, u32) = (360, 800);
/// The window Chromium opens: it cannot be narrower than 500 pixels; the
/// page inside is the emulated screen.
const WINDOW: (u32, u32) = (500, 800);
/// How much slower than a desktop-class core the phone's is: a mid-range
/// phone has about a quarter of one.
const CPU_SLOWDOWN: f64 = 4.0;
/// The desktop-class core the phone is a quarter of, as a speed: events a
/// second of the pipeline section's "parse the watch line into a tree only"
/// path (one thread, no I/O) on the machine of BENCHMARKS.md of 2026-11-28,
/// the one where this section first met its goals at DevTools' ÷4. The
/// machine of 2026-11-25, when the goals were set, read 346,606: a faster
/// reference would make a faster phone, so the slower one is kept.
const DESKTOP_PARSE_PER_SECOND: f64 = 263_726.0;
/// Passes of the parse reading, and the events of each: about a second in
/// all on that desktop, the median taken.
const SPEED_READINGS: usize = 5;
const SPEED_EVENTS: usize = 50_000;
/// Budgets the issue of a thousand phones sets: frames per second at every
/// rate, and first paint.
const FPS_GOAL: f64 = 60.0;
const FIRST_PAINT_GOAL: Duration = Duration::from_millis(1_500);
/// Keeps the app's wasm exports where the bench can read them (the wasm
/// memory's size, and `heap_live_bytes`, the live bytes of the app's Rust
/// heap): the page's loader announces the started app with its exports.
const KEEP_WASM_EXPORTS: &str = "addEventListener('TrunkApplicationStarted', \
    e => { window.__wasmExports = e.detail.wasm; });";
/// How often memory is read during the soak.
const SAMPLE_EVERY: Duration = Duration::from_secs(60);
/// How long after a forced garbage collection memory is read: the
/// collector's sweeping and the pages it gives back finish in the
/// background.
const AFTER_GC: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct Config {
    pub runs: usize,
    pub watchlife: PathBuf,
    /// Events a second the page should receive.
    pub targets: Vec<u32>,
    /// How long the page stays open at the last target, on the phone of a
    /// fixed speed, while its memory is read every [`SAMPLE_EVERY`].
    pub soak: Duration,
}

/// One emulated phone's CPU: DevTools' throttling rate, and what it is.
#[derive(Debug, Clone, Copy)]
struct Cpu {
    rate: f64,
    /// The same phone whatever the machine (else: this machine ÷4).
    fixed: bool,
}

impl Cpu {
    /// The phone of a fixed speed on a machine whose parse reading is
    /// `parse_per_second`: a quarter of the reference desktop. On a machine
    /// slower than that phone, the page runs unthrottled (and is slower).
    fn fixed(parse_per_second: f64) -> Cpu {
        let rate = CPU_SLOWDOWN * parse_per_second / DESKTOP_PARSE_PER_SECOND;
        Cpu {
            rate: if rate.is_finite() {
                rate.max(1.0)
            } else {
                CPU_SLOWDOWN
            },
            fixed: true,
        }
    }

    /// This machine ÷4, as DevTools' preset slows it.
    fn this_machine() -> Cpu {
        Cpu {
            rate: CPU_SLOWDOWN,
            fixed: false,
        }
    }

    fn name(&self) -> String {
        if self.fixed {
            format!(
                "a quarter of the reference desktop (this machine ÷{:.2})",
                self.rate
            )
        } else {
            format!("this machine ÷{}", self.rate)
        }
    }
}

/// The tab's memory at one moment of the soak.
struct Sample {
    minute: f64,
    /// The tab's renderer: resident anonymous memory (wasm, JS heap, DOM).
    anon: f64,
    /// The JS heap in use right after a full garbage collection, as the
    /// page reads it.
    heap: f64,
    /// The app's wasm linear memory (it grows, never shrinks).
    wasm: f64,
    /// The bytes the app's Rust heap holds: what the page keeps, whatever
    /// its wasm memory once grew to.
    rust_heap: f64,
    /// The events the page holds in its log (bounded by the page).
    rows: f64,
}

/// One phone's figures, a [`Figures`] per target.
struct PhoneFigures {
    cpu: Cpu,
    figures: Vec<Figures>,
}

pub struct Gathered {
    /// This machine's parse reading, events/s ([`crate::pipeline::parse_per_second`]).
    parse_per_second: f64,
    /// The phone of a fixed speed first, then this machine ÷4.
    phones: Vec<PhoneFigures>,
    soak: Vec<Sample>,
    failure: Option<String>,
    missing: Vec<&'static str>,
}

impl Scenario for Config {
    type Figures = Gathered;

    fn measure(&self) -> Gathered {
        let mut gathered = Gathered {
            parse_per_second: f64::NAN,
            phones: Vec::new(),
            soak: Vec::new(),
            failure: None,
            missing: crate::browser::missing_programs(),
        };
        if !gathered.missing.is_empty() {
            return gathered;
        }
        progress!("phone: reading this machine's single-core speed");
        gathered.parse_per_second = crate::pipeline::parse_per_second(SPEED_EVENTS, SPEED_READINGS);
        let targets = || self.targets.iter().map(|_| Figures::default()).collect();
        gathered.phones = [Cpu::fixed(gathered.parse_per_second), Cpu::this_machine()]
            .into_iter()
            .map(|cpu| PhoneFigures {
                cpu,
                figures: targets(),
            })
            .collect();
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        gathered.failure = runtime.block_on(self.drive(&mut gathered)).err();
        gathered
    }

    fn report(&self, gathered: Gathered, report: &mut Report, seconds: f64) {
        if !gathered.missing.is_empty() {
            report.not_measured.push(format!(
                "**The page on a phone**: {} not installed (`make test` installs them).",
                gathered.missing.join(" and ")
            ));
            return;
        }
        let mut summary = Vec::new();
        for phone in &gathered.phones {
            for (f, target) in phone.figures.iter().zip(&self.targets) {
                summary.push(format!(
                    "{}: {target} events/s wanted: {} received, {} fps, first paint {}",
                    phone.cpu.name(),
                    num(f.received.median()),
                    num(f.fps.median()),
                    micros(f.first_paint.median())
                ));
                if !f.fps.runs.is_empty() {
                    let cpu = if phone.cpu.fixed {
                        "a quarter of the reference desktop's CPU".to_string()
                    } else {
                        format!("CPU ÷{}", phone.cpu.rate)
                    };
                    report.headline(
                        format!(
                            "phone (360×800, {cpu}): page frames per second at {target} \
                             events/s (goal {FPS_GOAL})"
                        ),
                        f.fps.show(num),
                    );
                }
            }
        }
        let mut notes = vec![
            format!(
                "Goals: {FPS_GOAL} frames per second at each rate, first paint under {} s, and \
                 no unbounded growth of memory over 10 minutes of a busy story. Headless \
                 Chromium draws without a display and shares the two cores with `watchlife` \
                 and its demo; the throttling slows the page's own work on top of that.",
                FIRST_PAINT_GOAL.as_secs_f64()
            ),
            speed_note(gathered.parse_per_second, &gathered.phones),
        ];
        notes.extend(soak_note(&gathered.soak));
        notes.extend(stopped_early(gathered.failure.as_deref()));
        let mut tables: Vec<Table> = gathered
            .phones
            .iter()
            .map(|phone| self.table(phone))
            .collect();
        if !gathered.soak.is_empty() {
            tables.push(soak_table(&gathered.soak));
        }
        report.sections.push(Section {
            title: "The page on a phone: 360×800, a quarter of a desktop's CPU".into(),
            method: self.method(),
            tables,
            notes,
            summary,
            seconds,
        });
    }
}

impl Config {
    /// Calibrates, measures every run of every phone at every target, then
    /// soaks the phone of a fixed speed at the last target.
    async fn drive(&self, gathered: &mut Gathered) -> Result<(), String> {
        let browser_config = crate::browser::Config {
            runs: self.runs,
            watchlife: self.watchlife.clone(),
            targets: self.targets.clone(),
        };
        let mut rates = Vec::new();
        for target in &self.targets {
            rates.push(calibrate(&browser_config, *target).await?);
        }
        for phone in gathered.phones.iter_mut() {
            for (f, rate) in phone.figures.iter_mut().zip(&rates) {
                f.rate = *rate;
            }
        }
        for run in 0..self.runs {
            for phone in gathered.phones.iter_mut() {
                for f in phone.figures.iter_mut() {
                    progress!(
                        "phone ({}): run {}/{}, demo at {} changes/s",
                        phone.cpu.name(),
                        run + 1,
                        self.runs,
                        f.rate
                    );
                    let opened = Phone::open(&self.watchlife, f.rate, phone.cpu).await?;
                    let m = opened.measure().await;
                    opened.close().await;
                    f.add(&m?);
                }
            }
        }
        let (Some(fixed), Some(rate)) = (gathered.phones.first(), rates.last()) else {
            return Ok(());
        };
        progress!(
            "phone ({}): {} min at {} changes/s",
            fixed.cpu.name(),
            self.soak.as_secs() / 60,
            rate
        );
        let opened = Phone::open(&self.watchlife, *rate, fixed.cpu).await?;
        let soaked = opened.soak(self.soak, &mut gathered.soak).await;
        opened.close().await;
        soaked
    }

    fn table(&self, phone: &PhoneFigures) -> Table {
        let headers = FramesHeaders {
            wanted: "events per second wanted",
            resyncs: false,
            fps: "page frames per second (goal 60)",
            first_paint: "first paint (goal < 1.5 s)",
        };
        let mut table = frames_table(&headers, &self.targets, &phone.figures);
        table.caption = format!("The phone's CPU: {}", phone.cpu.name());
        table
    }

    fn method(&self) -> String {
        format!(
            "`watchlife --demo --demo-rate N` serves the app, N chosen as in the browser \
             section so that the bridge publishes about the events wanted. A fresh headless \
             Chromium ({}×{} window) is given a phone's screen through DevTools \
             (`Emulation.setDeviceMetricsOverride`: {}×{} CSS pixels, one device pixel each, \
             a mobile viewport) and a slower CPU (`Emulation.setCPUThrottlingRate`), then \
             opens the page at its default speed, as a shared link does. Two phones: one a \
             quarter as fast as the reference desktop whatever the machine (the rate is \
             {CPU_SLOWDOWN} × this machine's speed ÷ the desktop's, the speed read as the \
             pipeline section's parse-only path, the median of {SPEED_READINGS} passes over \
             {} events, against {} events/s on the desktop of 2026-11-28), and this machine \
             ÷{CPU_SLOWDOWN} as DevTools' preset has it. First paint, frames per second and \
             frames received are measured as in the browser section. Then the page stays \
             open on the first phone at the last rate for {} minutes, its memory read every \
             minute, each time {} s after a full garbage collection forced through DevTools \
             (`HeapProfiler.collectGarbage`), so that what is read is what the page holds: \
             the tab renderer's `RssAnon` (where wasm memory, the JS heap and the DOM live), \
             the app's wasm memory, the bytes its Rust heap holds (counted by the app's own \
             allocator, `heap_live_bytes`), the JS heap in use (`performance.memory`), and \
             the rows of its event log. {} runs.",
            WINDOW.0,
            WINDOW.1,
            SCREEN.0,
            SCREEN.1,
            num(SPEED_EVENTS as f64),
            num(DESKTOP_PARSE_PER_SECOND),
            self.soak.as_secs() / 60,
            AFTER_GC.as_secs(),
            self.runs
        )
    }
}

/// What this machine's speed made of the phone of a fixed speed.
fn speed_note(parse_per_second: f64, phones: &[PhoneFigures]) -> String {
    let relative = parse_per_second / DESKTOP_PARSE_PER_SECOND;
    let fixed = phones.iter().find(|p| p.cpu.fixed).map(|p| p.cpu.rate);
    let mut note = format!(
        "This machine parsed {} events/s on one thread, {:.2}× the reference desktop's {}",
        num(parse_per_second),
        relative,
        num(DESKTOP_PARSE_PER_SECOND)
    );
    match fixed {
        Some(rate) if CPU_SLOWDOWN * relative < 1.0 => note.push_str(&format!(
            ": slower than the phone itself, so that phone ran unthrottled (÷{rate}) and \
             its figures understate the phone."
        )),
        Some(rate) => note.push_str(&format!(
            ": the phone of a fixed speed is this machine ÷{rate:.2}."
        )),
        None => note.push('.'),
    }
    note
}

/// The soak's readings.
fn soak_table(samples: &[Sample]) -> Table {
    let mut table = Table::new(
        "The tab's memory while the busier story plays",
        &[
            "minute",
            "renderer RssAnon",
            "wasm memory",
            "Rust heap live",
            "JS heap live (after a full GC)",
            "event log rows",
        ],
    );
    for s in samples {
        table.row(vec![
            num(s.minute),
            bytes(s.anon),
            bytes(s.wasm),
            bytes(s.rust_heap),
            bytes(s.heap),
            num(s.rows),
        ]);
    }
    table
}

/// Growth over the second half of the soak beside the first half's: a page
/// whose memory is bounded stops growing once its logs are full. Each half's
/// growth is also given as the slope of a least-squares line through its
/// readings, which one noisy reading at either end does not decide.
fn soak_note(samples: &[Sample]) -> Option<String> {
    let (first, last) = (samples.first()?, samples.last()?);
    let middle = samples.get(samples.len() / 2)?;
    let halves = |read: fn(&Sample) -> f64| {
        format!(
            "{} then {}",
            signed_bytes(read(middle) - read(first)),
            signed_bytes(read(last) - read(middle))
        )
    };
    let half = samples.len() / 2;
    let slopes = |read: fn(&Sample) -> f64| {
        format!(
            "{} then {}",
            per_minute(slope(&samples[..=half], read)),
            per_minute(slope(&samples[half..], read))
        )
    };
    Some(format!(
        "Over the soak the tab's anonymous memory went from {} (minute {}) to {} (minute {}) \
         through {} (minute {}). Growth in the first half, then in the second: the tab's \
         anonymous memory {}; the wasm memory {}; the Rust heap {}; the live JS heap {}. \
         Fitted with a line, first half then second: the tab's anonymous memory {}; the \
         Rust heap {}.",
        bytes(first.anon),
        num(first.minute),
        bytes(last.anon),
        num(last.minute),
        bytes(middle.anon),
        num(middle.minute),
        halves(|s| s.anon),
        halves(|s| s.wasm),
        halves(|s| s.rust_heap),
        halves(|s| s.heap),
        slopes(|s| s.anon),
        slopes(|s| s.rust_heap),
    ))
}

/// The slope, per minute, of the least-squares line through `read` of
/// `samples` against their minute; `None` under two samples.
fn slope(samples: &[Sample], read: fn(&Sample) -> f64) -> Option<f64> {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return None;
    }
    let mean_x = samples.iter().map(|s| s.minute).sum::<f64>() / n;
    let mean_y = samples.iter().map(read).sum::<f64>() / n;
    let (mut xy, mut xx) = (0.0, 0.0);
    for s in samples {
        xy += (s.minute - mean_x) * (read(s) - mean_y);
        xx += (s.minute - mean_x).powi(2);
    }
    (xx > 0.0).then(|| xy / xx)
}

fn per_minute(slope: Option<f64>) -> String {
    match slope {
        Some(b) => format!("{} a minute", signed_bytes(b)),
        None => "too few readings".into(),
    }
}

fn signed_bytes(b: f64) -> String {
    if b < 0.0 {
        format!("−{}", bytes(-b))
    } else {
        format!("+{}", bytes(b))
    }
}

/// The demo's bridge and a phone's page on it.
struct Phone {
    bridge: Watchlife,
    driver: Driver,
    client: Client,
}

impl Phone {
    /// Starts the demo at `rate` and an emulated phone of `cpu`, the page
    /// not opened yet.
    async fn open(watchlife: &std::path::Path, rate: u32, cpu: Cpu) -> Result<Phone, String> {
        let bridge = Watchlife::start_demo(watchlife, &rate.to_string(), &[])?;
        let driver = Driver::start()?;
        let client = driver.session_sized(WINDOW).await?;
        let device = serde_json::json!({
            "width": SCREEN.0, "height": SCREEN.1, "deviceScaleFactor": 1, "mobile": true
        });
        cdp(&client, "Emulation.setDeviceMetricsOverride", device).await?;
        let slow = serde_json::json!({ "rate": cpu.rate });
        cdp(&client, "Emulation.setCPUThrottlingRate", slow).await?;
        let keep_exports = serde_json::json!({ "source": KEEP_WASM_EXPORTS });
        cdp(
            &client,
            "Page.addScriptToEvaluateOnNewDocument",
            keep_exports,
        )
        .await?;
        Ok(Phone {
            bridge,
            driver,
            client,
        })
    }

    /// Opens the page and measures it as the browser section does: first
    /// paint, then frames per second and the frames received.
    async fn measure(&self) -> Result<Measured, String> {
        measure_page(&self.client, self.bridge.addr).await
    }

    /// Opens the page, then reads the tab's memory every [`SAMPLE_EVERY`]
    /// for `length`.
    async fn soak(&self, length: Duration, samples: &mut Vec<Sample>) -> Result<(), String> {
        self.client
            .goto(&format!("http://{}/", self.bridge.addr))
            .await
            .map_err(|e| format!("opening the app: {e}"))?;
        wait_connected(&self.client).await?;
        let t0 = Instant::now();
        let readings = (length.as_secs() / SAMPLE_EVERY.as_secs()).max(1);
        for reading in 1..=readings {
            let due = SAMPLE_EVERY * reading as u32;
            tokio::time::sleep(due.saturating_sub(t0.elapsed())).await;
            // What the page holds, not what its garbage collector has yet
            // to reclaim: V8 lets garbage pile up to a heap size of its
            // choosing before it collects, so a reading between two
            // collections says more about the collector than the page.
            cdp(
                &self.client,
                "HeapProfiler.collectGarbage",
                serde_json::json!({}),
            )
            .await?;
            tokio::time::sleep(AFTER_GC).await;
            let page = self
                .eval(
                    "const w = window.__wasmExports; \
                     return [performance.memory ? performance.memory.usedJSHeapSize : null, \
                     document.querySelectorAll('tr.event-row').length, \
                     w ? w.memory.buffer.byteLength : null, \
                     w && w.heap_live_bytes ? w.heap_live_bytes() : null];",
                )
                .await?;
            let v = |i: usize| page.get(i).and_then(|x| x.as_f64()).unwrap_or(f64::NAN);
            let sample = Sample {
                minute: t0.elapsed().as_secs_f64() / 60.0,
                anon: renderers(self.driver.pid()).tab_anon,
                heap: v(0),
                rows: v(1),
                wasm: v(2),
                rust_heap: v(3),
            };
            progress!(
                "phone: minute {}, the tab's anonymous memory {}, JS heap {}, Rust heap {}",
                num(sample.minute),
                bytes(sample.anon),
                bytes(sample.heap),
                bytes(sample.rust_heap)
            );
            samples.push(sample);
        }
        Ok(())
    }

    async fn eval(&self, script: &str) -> Result<serde_json::Value, String> {
        self.client
            .execute(script, vec![])
            .await
            .map_err(|e| e.to_string())
    }

    async fn close(self) {
        let _ = self.client.close().await;
        drop(self.driver);
        drop(self.bridge);
    }
}

#[cfg(test)]
mod tests {
    use super::{CPU_SLOWDOWN, Cpu, DESKTOP_PARSE_PER_SECOND, Sample, slope};

    #[test]
    fn the_fixed_phone_is_a_quarter_of_the_desktop_whatever_the_machine() {
        let on = |speed: f64| Cpu::fixed(speed * DESKTOP_PARSE_PER_SECOND).rate;
        // On the desktop itself, DevTools' ÷4; on a machine half as fast, ÷2.
        assert_eq!(on(1.0), CPU_SLOWDOWN);
        assert_eq!(on(0.5), CPU_SLOWDOWN / 2.0);
        assert_eq!(on(2.0), CPU_SLOWDOWN * 2.0);
        // Slower than the phone: no throttling (a rate under 1 would speed
        // the page up), whatever the reading.
        assert_eq!(on(0.1), 1.0);
        assert_eq!(Cpu::fixed(0.0).rate, 1.0);
        // No reading: DevTools' ÷4, as before there was one.
        assert_eq!(Cpu::fixed(f64::NAN).rate, CPU_SLOWDOWN);
        assert!(Cpu::fixed(f64::NAN).fixed && !Cpu::this_machine().fixed);
    }

    fn at(minute: f64, anon: f64) -> Sample {
        Sample {
            minute,
            anon,
            heap: 0.0,
            wasm: 0.0,
            rust_heap: 0.0,
            rows: 0.0,
        }
    }

    #[test]
    fn the_slope_follows_the_readings_not_their_ends() {
        let rising: Vec<_> = (1..=5)
            .map(|m| at(m as f64, 100.0 + 3.0 * m as f64))
            .collect();
        assert_eq!(slope(&rising, |s| s.anon), Some(3.0));
        // Flat but for one low reading in the middle: the ends say nothing
        // grew, and so does the line.
        let flat = [
            at(1.0, 10.0),
            at(2.0, 10.0),
            at(3.0, 4.0),
            at(4.0, 10.0),
            at(5.0, 10.0),
        ];
        assert_eq!(slope(&flat, |s| s.anon), Some(0.0));
        assert_eq!(slope(&flat[..1], |s| s.anon), None);
    }
}
