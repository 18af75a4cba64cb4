//! Short lines on a stage's node, one per item (a Reflector's resource, a
//! listener): a muted lead, the words, and a title with the whole story.
//! One renderer serves both nodes, so the page carries its code once.

use leptos::prelude::*;

/// Height of one line (10.5px monospace text).
pub const LINE_H: f64 = 13.5;
/// Average width of one character of a line, to squeeze a long line into
/// its node rather than let it overflow.
const CHAR_W: f64 = 6.3;

/// One line on a node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLine {
    /// Classes of the line's group (`reflector alarming`, `listener`).
    pub class: String,
    /// What the line is about, as its `data-key` (a resource, a listener).
    pub key: String,
    pub lead: String,
    pub words: String,
    pub title: String,
}

/// `lines` from `top` down, in the node at `x` of width `width`.
pub fn node_lines(x: f64, top: f64, width: f64, lines: Vec<NodeLine>) -> impl IntoView {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let chars = l.lead.chars().count() + 1 + l.words.chars().count();
            let fit = (chars as f64 * CHAR_W > width - 16.0).then_some(width - 16.0);
            view! {
                <g class=l.class data-key=l.key>
                    <text
                        class="node-line"
                        x=x + 8.0
                        y=top + i as f64 * LINE_H
                        textLength=fit
                        lengthAdjust="spacingAndGlyphs"
                    >
                        <tspan class="line-lead">{l.lead}" "</tspan>
                        <tspan class="line-words">{l.words}</tspan>
                    </text>
                    <title>{l.title}</title>
                </g>
            }
        })
        .collect_view()
}
