//! Short lines on a stage's node, one per item (a Reflector's resource, a
//! listener): a muted lead, the words, and a title with the whole story.
//! One renderer serves both nodes, so the page carries its code once.

use super::pipeline::layout::Dims;
use leptos::prelude::*;

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

/// `lines` from `top` down, in the node at `x` of width `width`, spaced
/// and squeezed as `dims` says (the line's height, a character's width).
pub fn node_lines(
    x: f64,
    top: f64,
    width: f64,
    dims: &'static Dims,
    lines: Vec<NodeLine>,
) -> impl IntoView {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let chars = l.lead.chars().count() + 1 + l.words.chars().count();
            let fit = (chars as f64 * dims.mono_char_w > width - 16.0).then_some(width - 16.0);
            view! {
                <g class=l.class data-key=l.key>
                    <text
                        class="node-line"
                        x=x + 8.0
                        y=top + i as f64 * dims.line_h
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
