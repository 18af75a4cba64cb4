//! The Reflector's node's short lines: one per resource, its latest state
//! and, while one is out, its request as asked and who answered.

use super::super::node_lines::NodeLine;
use crate::model::Model;
use crate::narration::{reflector_state, reflector_state_short};
use crate::notice::reflector_alarming;
use leptos::prelude::*;

/// Reflector lines on its node (one per resource); more are counted.
const REFLECTOR_LINES: usize = 4;

/// One line per resource for the Reflector's node: its latest state, the
/// request as asked while one is out.
pub fn reflector_lines(model: Model) -> Vec<NodeLine> {
    let all = model.reflectors.get();
    let answers = model.answers.get();
    let more = all.len().saturating_sub(REFLECTOR_LINES);
    all.into_iter()
        .take(REFLECTOR_LINES)
        .enumerate()
        .map(|(i, (resource, state))| {
            let mut words = reflector_state_short(&state);
            let answer = answers.get(&resource);
            if let Some(answer) = answer {
                words.push(' ');
                words.push_str(&crate::narration::answer_short(answer));
            }
            if i + 1 == REFLECTOR_LINES && more > 0 {
                words.push_str(&format!(" +{more}"));
            }
            NodeLine {
                class: if reflector_alarming(&state) {
                    "reflector alarming".into()
                } else {
                    "reflector".into()
                },
                // `deployments.apps` reads as `deployments` on the node.
                lead: resource.split('.').next().unwrap_or(&resource).to_string(),
                title: match answer {
                    Some(answer) => format!(
                        "{resource}: {}\n{}",
                        reflector_state(&state),
                        crate::narration::answer(answer)
                    ),
                    None => format!("{resource}: {}", reflector_state(&state)),
                },
                key: resource,
                words,
            }
        })
        .collect()
}
