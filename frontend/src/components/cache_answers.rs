//! The apiserver's side of each Reflector's last request, on the watch
//! cache's node: who answered it, and, for a consistent LIST, the wait for
//! the cache to catch up with the store's revision (v1.34+
//! `ConsistentListFromCache`), or the store answering once the wait ran out.

use super::node_lines::NodeLine;
use crate::micros::format_micros;
use crate::model::Model;
use crate::narration;
use leptos::prelude::*;
use watchlife_protocol::ServerAnswer;

/// Resources with a line on the node; more are counted on the last one.
const CACHE_LINES: usize = 4;

/// One line per resource whose last request the demo's apiserver answered.
pub fn cache_answer_lines(model: Model) -> Vec<NodeLine> {
    let answers = model.answers.get();
    let more = answers.len().saturating_sub(CACHE_LINES);
    answers
        .into_iter()
        .take(CACHE_LINES)
        .enumerate()
        .map(|(i, (resource, answer))| {
            let mut words = on_the_cache(&answer);
            if i + 1 == CACHE_LINES && more > 0 {
                words.push_str(&format!(" +{more}"));
            }
            NodeLine {
                class: match answer {
                    ServerAnswer::ConsistentList {
                        from_cache: false, ..
                    } => "cache-answer alarming".into(),
                    _ => "cache-answer".into(),
                },
                lead: resource.split('.').next().unwrap_or(&resource).to_string(),
                title: format!("{resource}: {}", narration::answer(&answer)),
                key: resource,
                words,
            }
        })
        .collect()
}

/// The answer, as the server side did it, in the few words a node holds.
pub fn on_the_cache(answer: &ServerAnswer) -> String {
    match answer {
        ServerAnswer::ConsistentList {
            store_revision,
            waited_micros,
            from_cache: true,
            ..
        } => format!(
            "LIST \"\": etcd @{store_revision}, caught up in {}",
            format_micros(*waited_micros as i64)
        ),
        ServerAnswer::ConsistentList {
            store_revision,
            waited_micros,
            ..
        } => format!(
            "LIST \"\": behind etcd @{store_revision} after {} → etcd",
            format_micros(*waited_micros as i64)
        ),
        ServerAnswer::ListFromWatchCache {
            revision,
            waited_micros: 0,
            ..
        } => format!("LIST served @{revision}"),
        ServerAnswer::ListFromWatchCache {
            revision,
            waited_micros,
            ..
        } => format!(
            "LIST waited {} for @{revision}",
            format_micros(*waited_micros as i64)
        ),
        ServerAnswer::ListFromEtcd { revision, .. } => format!("LIST passed to etcd @{revision}"),
        ServerAnswer::WatchReplayed { events, .. } => format!("WATCH: {events} replayed"),
        ServerAnswer::WatchSynthetic { events, .. } => format!("WATCH: {events} synthetic"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consistent_list_says_what_the_cache_waited_for_and_who_answered() {
        let answer = |from_cache| ServerAnswer::ConsistentList {
            asked: String::new(),
            store_revision: 42,
            revision: 42,
            items: 3,
            waited_micros: 1_500,
            from_cache,
        };
        let cached = on_the_cache(&answer(true));
        assert!(
            cached.contains("@42") && cached.contains("caught up"),
            "{cached}"
        );
        let behind = on_the_cache(&answer(false));
        assert!(
            behind.contains("behind") && behind.ends_with("→ etcd"),
            "{behind}"
        );
    }
}
