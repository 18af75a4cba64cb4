//! The places a token can be on the drawing: the nine stages and, when the
//! server side is opened, the apiserver's inner hops between them.

use watchlife_protocol::Stage;

/// An inner hop of the apiserver, as the demo's apiserver measures it
/// (`server` in each event, see `protocol/src/server_path.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// The Cacher's Reflector read the change from etcd's watch.
    CacherReflector,
    /// The Cacher's `incoming` queue, entered with the watch cache.
    Incoming,
    /// The dispatcher took it from `incoming`.
    Dispatcher,
    /// It was put in this watcher's buffer.
    Buffer,
}

impl Hop {
    /// The hop's name, drawn on two lines.
    pub fn label(self) -> [&'static str; 2] {
        match self {
            Hop::CacherReflector => ["Cacher's", "reflector"],
            Hop::Incoming => ["incoming", "queue"],
            Hop::Dispatcher => ["dispatcher", ""],
            Hop::Buffer => ["watcher's", "buffer"],
        }
    }

    /// The name in selectors and classes.
    pub fn id(self) -> &'static str {
        match self {
            Hop::CacherReflector => "cacher_reflector",
            Hop::Incoming => "incoming",
            Hop::Dispatcher => "dispatcher",
            Hop::Buffer => "buffer",
        }
    }

    /// What happens there, in a few words.
    pub fn explain(self) -> &'static str {
        match self {
            Hop::CacherReflector => "reads etcd's watch",
            Hop::Incoming => "waits for dispatch",
            Hop::Dispatcher => "copies to watchers",
            Hop::Buffer => "waits to be written",
        }
    }
}

/// A place on the drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spot {
    Stage(Stage),
    Hop(Hop),
}

impl Spot {
    pub fn is_hop(self) -> bool {
        matches!(self, Spot::Hop(_))
    }

    /// Inner hops are all in the apiserver.
    pub fn is_server_side(self) -> bool {
        match self {
            Spot::Stage(s) => s.is_server_side(),
            Spot::Hop(_) => true,
        }
    }
}

/// Every spot in pipeline order: the nine stages, and with `open` the inner
/// hops where they happen — the Cacher's reflector before the watch cache,
/// `incoming`, the dispatcher and the watcher's buffer before the write to
/// the stream (the watch stream's mark).
pub fn spots(open: bool) -> Vec<Spot> {
    let mut out = Vec::with_capacity(13);
    for stage in Stage::ALL {
        if open {
            match stage {
                Stage::WatchCache => out.push(Spot::Hop(Hop::CacherReflector)),
                Stage::WatchStream => {
                    out.extend([Hop::Incoming, Hop::Dispatcher, Hop::Buffer].map(Spot::Hop))
                }
                _ => {}
            }
        }
        out.push(Spot::Stage(stage));
    }
    out
}
