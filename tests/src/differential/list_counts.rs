//! The LISTs each side made during one differential test, as one
//! machine-readable line: `make bench` runs the differential tests with
//! [`ENV`] set and reads these lines back with [`ListCounts::parse`].

use super::Pair;
use super::trace::Trace;
use serde_json::{Value, json};

/// Set (to anything) to make [`Pair::finish`] print a [`ListCounts`] line.
pub const ENV: &str = "WATCHLIFE_DIFFERENTIAL_LISTS";

/// What starts the line on stdout.
pub const PREFIX: &str = "watchlife-differential-lists ";

/// One side's LISTs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Every LIST request (first pages), retries included.
    pub requests: usize,
    /// As the test compares them: a failed LIST and its retries count once.
    pub compared: usize,
}

/// One test's (one fault's) LISTs, client-go's and watchlife's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCounts {
    /// The test's name.
    pub fault: String,
    pub client_go: Counts,
    pub watchlife: Counts,
    /// The test found no difference between the sides (LISTs, calls,
    /// WATCHes, final objects).
    pub equal: bool,
}

impl ListCounts {
    /// The pair's counts, named after the running test (the thread's name,
    /// which the test harness sets).
    pub fn of(pair: &Pair) -> ListCounts {
        let counts = |trace: &Trace| Counts {
            requests: trace.lists().len(),
            compared: super::lists(trace).len(),
        };
        ListCounts {
            fault: std::thread::current()
                .name()
                .unwrap_or("unnamed")
                .to_string(),
            client_go: counts(&pair.client_go),
            watchlife: counts(&pair.watchlife),
            equal: pair.problems.is_empty(),
        }
    }

    /// The line, [`PREFIX`] then JSON.
    pub fn line(&self) -> String {
        let side = |c: Counts| json!({"requests": c.requests, "compared": c.compared});
        let body = json!({
            "fault": self.fault,
            "client_go": side(self.client_go),
            "watchlife": side(self.watchlife),
            "equal": self.equal,
        });
        format!("{PREFIX}{body}")
    }

    /// A line printed by [`ListCounts::line`]; `None` for any other line.
    pub fn parse(line: &str) -> Option<ListCounts> {
        let body: Value = serde_json::from_str(line.strip_prefix(PREFIX)?).ok()?;
        let side = |name: &str| {
            let count = |f: &str| body[name][f].as_u64().map(|n| n as usize);
            Some(Counts {
                requests: count("requests")?,
                compared: count("compared")?,
            })
        };
        Some(ListCounts {
            fault: body["fault"].as_str()?.to_string(),
            client_go: side("client_go")?,
            watchlife: side("watchlife")?,
            equal: body["equal"].as_bool()?,
        })
    }
}

/// Prints the pair's line when [`ENV`] is set.
pub fn print_if_asked(pair: &Pair) {
    if std::env::var_os(ENV).is_some() {
        println!("{}", ListCounts::of(pair).line());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_written() {
        let counts = ListCounts {
            fault: "a_410".into(),
            client_go: Counts {
                requests: 5,
                compared: 2,
            },
            watchlife: Counts {
                requests: 4,
                compared: 2,
            },
            equal: true,
        };
        assert_eq!(ListCounts::parse(&counts.line()), Some(counts));
        assert_eq!(ListCounts::parse("test a_410 ... ok"), None);
    }
}
