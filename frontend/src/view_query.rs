//! The view as the URL's query keeps it — paused, speed, filters, captions,
//! presenter mode, theme, what to replay or compare — so that a link
//! reproduces the view: parsed from the query, written back to it.

pub use watchlife_protocol::connection::encode;

/// Playback speeds, slowest first: how long one token's whole journey takes
/// on screen, in ms. `None` is live: the measured times, undilated.
pub const SPEEDS: [(&str, Option<f64>); 5] = [
    ("slow motion", Some(8_000.0)),
    ("slower", Some(4_000.0)),
    ("normal", Some(2_000.0)),
    ("fast", Some(800.0)),
    ("live", None),
];
/// The speed a new page starts at: slow enough to follow one token.
pub const DEFAULT_SPEED: usize = 2;

/// Colour theme: the system's, or forced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

impl Theme {
    pub fn as_str(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
    fn parse(s: &str) -> Theme {
        match s {
            "light" => Theme::Light,
            "dark" => Theme::Dark,
            _ => Theme::System,
        }
    }
}

/// How much of the page's own controls is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Controls {
    /// Everything: filters, actions, the recorder or the replay bar's tools.
    #[default]
    Full,
    /// The picture, the replay bar and the theme: a page embedded in docs.
    Minimal,
    /// The picture alone; the page embedding it drives the replay
    /// (`<watchlife-player controls="none">` and its script API).
    None,
}

impl Controls {
    pub fn as_str(self) -> &'static str {
        match self {
            Controls::Full => "full",
            Controls::Minimal => "minimal",
            Controls::None => "none",
        }
    }
    fn parse(s: &str) -> Controls {
        match s {
            "minimal" => Controls::Minimal,
            "none" => Controls::None,
            _ => Controls::Full,
        }
    }
}

/// The view as plain data, parsed from and written to the URL query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ViewQuery {
    pub paused: bool,
    pub speed: Option<usize>,
    pub resource: String,
    pub namespace: String,
    pub event_type: String,
    pub search: String,
    /// `bookmarks=0`: BOOKMARKs hidden from the events table.
    pub hide_bookmarks: bool,
    /// Captions on or off; `None` leaves it to the source (on for the demo).
    pub captions: Option<bool>,
    pub presenter: bool,
    pub theme: Theme,
    /// The bridge's access token, passed on to `/ws`; kept in the URL so
    /// that a reload (or the link) still gets in.
    pub token: String,
    /// A recording to play instead of connecting: its URL (`replay=`), or a
    /// scenario shipped with the app (`scenario=NAME`, read from
    /// `scenarios/NAME.jsonl` beside the page).
    pub replay: String,
    pub scenario: String,
    /// `controls=minimal` or `none`: for a page embedded in a docs site.
    pub controls: Controls,
    /// `loop=1`: a replay starts over when it ends.
    pub looping: bool,
    /// `kubernetes=1.20`: the release the in-page demo follows (kept so
    /// that a reload follows it too).
    pub kubernetes: String,
    /// `compare=1.20`: with `scenario=NAME`, the replay page plays
    /// `NAME.jsonl` beside `NAME-1.20.jsonl` on one clock (see
    /// [`ViewQuery::compared_recordings`]). Empty: one player.
    pub compare: String,
    /// How a replay plays, beyond what it plays.
    pub replay_options: ReplayOptions,
}

/// How a replay page was asked to play, beyond what it plays: the options a
/// docs page's `<watchlife-player>` passes on (fixed for the life of the page).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplayOptions {
    /// `markers=T:LABEL;…`: the author's markers, `T` in seconds (see
    /// [`crate::chapters::authored`]).
    pub markers: String,
    /// `markers_src=URL`: a file of markers, one `T:LABEL` per line (what
    /// `watchlife record --marker` writes beside a recording).
    pub markers_src: String,
    /// `pause_at_markers=1`: a guided tour, paused at each marker.
    pub pause_at_markers: bool,
    /// `start=S`: where the replay starts, in seconds of the recording.
    pub start_s: f64,
    /// `rate=X`: the replay speed as a multiple of the recorded pace (the
    /// nearest offered one is taken).
    pub rate: Option<f64>,
}

impl ViewQuery {
    /// The recording to play, if any: `replay=` as given, or the scenario's file.
    pub fn recording_url(&self) -> Option<String> {
        if !self.replay.is_empty() {
            Some(self.replay.clone())
        } else if !self.scenario.is_empty() {
            Some(format!(
                "scenarios/{}.jsonl",
                scenario_file_name(&self.scenario)
            ))
        } else {
            None
        }
    }

    /// The two recordings a compare view plays, left then right: the
    /// scenario's own (`NAME.jsonl`) and its recording under the compared
    /// profile (`NAME-PROFILE.jsonl`). `None` without both `scenario=` and
    /// `compare=`. A scenario named with the compared suffix already
    /// (`NAME-1.20`) is taken as `NAME`.
    pub fn compared_recordings(&self) -> Option<(String, String)> {
        if self.scenario.is_empty() || self.compare.is_empty() {
            return None;
        }
        let profile = scenario_file_name(&self.compare);
        let name = scenario_file_name(&self.scenario);
        let base = name
            .strip_suffix(&format!("-{profile}"))
            .filter(|b| !b.is_empty())
            .unwrap_or(&name);
        Some((
            format!("scenarios/{base}.jsonl"),
            format!("scenarios/{base}-{profile}.jsonl"),
        ))
    }
}

/// A scenario's name as a file name, never a path: anything but ASCII
/// letters, digits, `-` and `.` becomes `_` (`.` for release numbers such
/// as `1.20`; a name that is only dots is no name), and the fetch of a
/// scenario that does not exist says so.
fn scenario_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.contains("..") || cleaned.starts_with('.') {
        cleaned.replace('.', "_")
    } else {
        cleaned
    }
}

impl ViewQuery {
    /// Parses `?a=b&c=d` (with or without the `?`); unknown keys are ignored.
    pub fn parse(query: &str) -> ViewQuery {
        let mut v = ViewQuery::default();
        for pair in query.trim_start_matches('?').split('&') {
            let (k, val) = pair.split_once('=').unwrap_or((pair, ""));
            let val = decode(val);
            match k {
                "paused" => v.paused = val == "1",
                "speed" => v.speed = val.parse().ok().filter(|s| *s < SPEEDS.len()),
                "resource" => v.resource = val,
                "ns" => v.namespace = val,
                "type" => v.event_type = val.to_uppercase(),
                "q" => v.search = val,
                "bookmarks" => v.hide_bookmarks = val == "0",
                "captions" => v.captions = Some(matches!(val.as_str(), "1" | "on" | "true")),
                "presenter" => v.presenter = val == "1",
                "theme" => v.theme = Theme::parse(&val),
                "token" => v.token = val,
                "replay" => v.replay = val,
                "scenario" => v.scenario = val,
                "controls" => v.controls = Controls::parse(&val),
                "loop" => v.looping = val == "1",
                "kubernetes" => v.kubernetes = val,
                "compare" => v.compare = val,
                "markers" => v.replay_options.markers = val,
                "markers_src" => v.replay_options.markers_src = val,
                "pause_at_markers" => v.replay_options.pause_at_markers = val == "1",
                "start" => {
                    v.replay_options.start_s =
                        val.parse().ok().filter(|s: &f64| *s >= 0.0).unwrap_or(0.0)
                }
                "rate" => v.replay_options.rate = val.parse().ok().filter(|r: &f64| *r > 0.0),
                _ => {}
            }
        }
        v
    }

    /// The query string (with `?`, or empty for the default view).
    pub fn to_query(&self) -> String {
        // A text parameter is written only when it is not empty.
        let text = |k: &str, v: &String| (!v.is_empty()).then(|| format!("{k}={}", encode(v)));
        let parts: Vec<String> = [
            self.paused.then(|| "paused=1".to_string()),
            self.speed
                .filter(|s| *s != DEFAULT_SPEED)
                .map(|s| format!("speed={s}")),
            text("resource", &self.resource),
            text("ns", &self.namespace),
            text("type", &self.event_type),
            text("q", &self.search),
            self.hide_bookmarks.then(|| "bookmarks=0".to_string()),
            self.captions.map(|c| format!("captions={}", u8::from(c))),
            self.presenter.then(|| "presenter=1".to_string()),
            (self.theme != Theme::System).then(|| format!("theme={}", self.theme.as_str())),
            text("token", &self.token),
            text("replay", &self.replay),
            text("scenario", &self.scenario),
            text("kubernetes", &self.kubernetes),
            text("compare", &self.compare),
            (self.controls != Controls::Full)
                .then(|| format!("controls={}", self.controls.as_str())),
            self.looping.then(|| "loop=1".to_string()),
            text("markers", &self.replay_options.markers),
            text("markers_src", &self.replay_options.markers_src),
            self.replay_options
                .pause_at_markers
                .then(|| "pause_at_markers=1".to_string()),
            (self.replay_options.start_s > 0.0)
                .then(|| format!("start={}", self.replay_options.start_s)),
            self.replay_options.rate.map(|r| format!("rate={r}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

/// Percent-decodes a query value (`+` is a space).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match hex(bytes[i + 1]).zip(hex(bytes[i + 2])) {
                Some((hi, lo)) => {
                    out.push(hi * 16 + lo);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of one hexadecimal digit.
fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_round_trips() {
        let q = ViewQuery {
            paused: true,
            speed: Some(0),
            resource: "pods".into(),
            namespace: "default".into(),
            event_type: "MODIFIED".into(),
            search: "web 1/ä".into(),
            hide_bookmarks: true,
            captions: Some(false),
            presenter: true,
            theme: Theme::Dark,
            token: "s3cr+t/=".into(),
            replay: "https://example.com/a b.jsonl".into(),
            scenario: "scale".into(),
            controls: Controls::None,
            looping: true,
            kubernetes: "1.20".into(),
            compare: "1.20".into(),
            replay_options: ReplayOptions {
                markers: "1.5:the first LIST;12:a 410".into(),
                markers_src: "talk.jsonl.markers".into(),
                pause_at_markers: true,
                start_s: 2.5,
                rate: Some(0.5),
            },
        };
        let text = q.to_query();
        assert_eq!(ViewQuery::parse(&text), q);
    }

    #[test]
    fn a_scenario_is_a_file_beside_the_page_and_a_replay_url_wins() {
        assert_eq!(ViewQuery::parse("?captions=on").captions, Some(true));
        assert_eq!(ViewQuery::parse("?captions=off").captions, Some(false));
        let q = ViewQuery::parse("?scenario=pod-lifecycle");
        assert_eq!(
            q.recording_url().as_deref(),
            Some("scenarios/pod-lifecycle.jsonl")
        );
        let q = ViewQuery::parse("?scenario=../x");
        assert_eq!(q.recording_url().as_deref(), Some("scenarios/___x.jsonl"));
        let q = ViewQuery::parse("?scenario=compaction-relist-1.20");
        assert_eq!(
            q.recording_url().as_deref(),
            Some("scenarios/compaction-relist-1.20.jsonl"),
            "a release number in a scenario's name is kept"
        );
        let q = ViewQuery::parse("?scenario=..&compare=..");
        assert_eq!(q.recording_url().as_deref(), Some("scenarios/__.jsonl"));
        let q = ViewQuery::parse("?scenario=scale&replay=r.jsonl");
        assert_eq!(q.recording_url().as_deref(), Some("r.jsonl"));
        assert_eq!(ViewQuery::default().recording_url(), None);
    }

    #[test]
    fn a_compare_view_plays_the_scenario_beside_its_recording_under_the_other_profile() {
        let pair = |query: &str| ViewQuery::parse(query).compared_recordings();
        let expected = Some((
            "scenarios/compaction-relist.jsonl".to_string(),
            "scenarios/compaction-relist-1.20.jsonl".to_string(),
        ));
        assert_eq!(pair("?scenario=compaction-relist&compare=1.20"), expected);
        assert_eq!(
            pair("?scenario=compaction-relist-1.20&compare=1.20"),
            expected
        );
        assert_eq!(pair("?scenario=compaction-relist"), None, "no compare");
        assert_eq!(pair("?replay=a.jsonl&compare=1.20"), None, "no scenario");
        assert_eq!(
            pair("?scenario=scale&compare=../1.20"),
            Some((
                "scenarios/scale.jsonl".to_string(),
                "scenarios/scale-___1_20.jsonl".to_string()
            )),
            "a profile is a name, never a path"
        );
    }

    #[test]
    fn the_default_view_has_an_empty_query_and_junk_is_ignored() {
        assert_eq!(ViewQuery::default().to_query(), "");
        let q = ViewQuery::parse("?speed=99&bogus=1&q=%zz&type=deleted");
        assert_eq!(q.speed, None);
        assert_eq!(q.search, "%zz");
        assert_eq!(q.event_type, "DELETED");
    }
}
