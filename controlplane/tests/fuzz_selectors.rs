//! Label and field selectors, fuzzed: any text parses or is refused with
//! words, never a panic, whatever object it is then matched against;
//! selectors written from requirements parse back to those requirements,
//! and a selector mutated character by character still parses, or is
//! refused, without a panic, and what parses reads back the same once
//! written out again.
//!
//! Cases per property: `WATCHLIFE_FUZZ_CASES`, else `PROPTEST_CASES`, else
//! each property's own number (`make fuzz CASES=100000` sets the first).

use proptest::prelude::*;
use serde_json::{Value, json};
use watchlife_controlplane::resource::{self, ResourceType};
use watchlife_controlplane::selector::{
    FieldOp, FieldRequirement, FieldSelector, LabelOp, LabelSelector, Requirement, supported_fields,
};
use watchlife_fuzzkit::config;

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

fn label_name() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z0-9]",
        "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9]",
        proptest::sample::select(vec!["app", "tier", "in", "notin", "x"]).prop_map(String::from),
    ]
    .boxed()
}

fn label_key() -> BoxedStrategy<String> {
    (
        proptest::option::of(
            "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?){0,3}",
        ),
        label_name(),
    )
        .prop_map(|(prefix, name)| match prefix {
            Some(p) => format!("{p}/{name}"),
            None => name,
        })
        .boxed()
}

fn label_value() -> BoxedStrategy<String> {
    prop_oneof![Just(String::new()), label_name()].boxed()
}

/// One requirement, and how it is written.
fn requirement() -> impl Strategy<Value = (Requirement, String)> {
    let values = proptest::collection::vec(label_name(), 1..4).boxed();
    prop_oneof![
        (label_key(), label_value(), 0u8..2).prop_map(|(key, value, eq)| {
            let op = if eq == 0 { "=" } else { "==" };
            let text = format!("{key}{op}{value}");
            (
                Requirement {
                    key,
                    op: LabelOp::In(vec![value]),
                },
                text,
            )
        }),
        (label_key(), label_value()).prop_map(|(key, value)| {
            let text = format!("{key}!={value}");
            (
                Requirement {
                    key,
                    op: LabelOp::NotIn(vec![value]),
                },
                text,
            )
        }),
        (label_key(), values.clone()).prop_map(|(key, values)| {
            let text = format!("{key} in ({})", values.join(","));
            (
                Requirement {
                    key,
                    op: LabelOp::In(values),
                },
                text,
            )
        }),
        (label_key(), values).prop_map(|(key, values)| {
            let text = format!("{key} notin ( {} )", values.join(" , "));
            (
                Requirement {
                    key,
                    op: LabelOp::NotIn(values),
                },
                text,
            )
        }),
        label_key().prop_map(|key| (
            Requirement {
                key: key.clone(),
                op: LabelOp::Exists
            },
            key
        )),
        label_key().prop_map(|key| {
            let text = format!("!{key}");
            (
                Requirement {
                    key,
                    op: LabelOp::DoesNotExist,
                },
                text,
            )
        }),
    ]
}

fn label_selector() -> impl Strategy<Value = (Vec<Requirement>, String)> {
    proptest::collection::vec(requirement(), 0..5).prop_map(|rs| {
        let text = rs
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(",");
        (rs.into_iter().map(|(r, _)| r).collect(), text)
    })
}

/// Writes a parsed selector out again, in the canonical words.
fn write_labels(s: &LabelSelector) -> String {
    s.requirements
        .iter()
        .map(|r| match &r.op {
            // One value as `=` and `!=` (a set cannot hold the empty value).
            LabelOp::In(v) if v.len() == 1 => format!("{}={}", r.key, v[0]),
            LabelOp::NotIn(v) if v.len() == 1 => format!("{}!={}", r.key, v[0]),
            LabelOp::In(v) => format!("{} in ({})", r.key, v.join(",")),
            LabelOp::NotIn(v) => format!("{} notin ({})", r.key, v.join(",")),
            LabelOp::Exists => r.key.clone(),
            LabelOp::DoesNotExist => format!("!{}", r.key),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Character-level edits, with the selectors' own operators among the
/// characters inserted.
fn char_edits() -> impl Strategy<Value = Vec<(u8, usize, char)>> {
    let c = prop_oneof![
        3 => proptest::sample::select(vec!['=', '!', ',', '(', ')', ' ', '/', '.', '-', '_', '\\', '<', '>', 'a', '0', 'é', '\u{0}']),
        1 => any::<char>(),
    ];
    proptest::collection::vec((0u8..4, any::<usize>(), c), 1..5)
}

fn edit(text: &str, edits: &[(u8, usize, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(kind, i, c) in edits {
        let len = chars.len();
        match kind {
            0 => chars.insert(i % (len + 1), c),
            1 if len > 0 => {
                chars.remove(i % len);
            }
            2 if len > 0 => chars[i % len] = c,
            3 if len > 1 => chars.swap(i % len, (i / 7) % len),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// Objects to match against: labelled, bare, and of every odd shape.
fn object() -> impl Strategy<Value = Value> {
    prop_oneof![
        proptest::collection::btree_map(label_key(), label_value(), 0..4).prop_map(
            |labels| json!({"metadata": {"name": "a", "namespace": "default", "labels": labels}})
        ),
        Just(json!({})),
        Just(json!(null)),
        Just(json!({"metadata": null})),
        Just(json!({"metadata": {"labels": ["app"]}})),
        Just(json!({"metadata": {"labels": {"app": 1, "tier": null}}})),
        Just(json!({"metadata": {"name": 7}, "spec": {"nodeName": {"x": 1}}, "status": []})),
        Just(
            json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
        ),
    ]
}

fn resource_type() -> impl Strategy<Value = ResourceType> {
    proptest::sample::select(resource::ALL.to_vec())
}

/// A field value, escaped as a selector must write it.
fn escape(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn field_selector() -> impl Strategy<Value = (ResourceType, Vec<FieldRequirement>, String)> {
    resource_type().prop_flat_map(|rt| {
        let fields = supported_fields(rt).to_vec();
        let requirement = (
            proptest::sample::select(fields),
            any::<bool>(),
            prop_oneof!["[a-z0-9.-]{0,12}", "[ -~]{0,12}", "\\PC{0,8}"],
            any::<bool>(),
        )
            .prop_map(|(field, equals, value, doubled)| {
                let op = match (equals, doubled) {
                    (true, false) => "=",
                    (true, true) => "==",
                    (false, _) => "!=",
                };
                let text = format!("{field}{op}{}", escape(&value));
                let requirement = FieldRequirement {
                    field: field.to_string(),
                    op: if equals {
                        FieldOp::Equals
                    } else {
                        FieldOp::NotEquals
                    },
                    value,
                };
                (requirement, text)
            });
        proptest::collection::vec(requirement, 0..4).prop_map(move |rs| {
            let text = rs
                .iter()
                .map(|(_, t)| t.as_str())
                .collect::<Vec<_>>()
                .join(",");
            (rt, rs.into_iter().map(|(r, _)| r).collect(), text)
        })
    })
}

fn write_fields(s: &FieldSelector) -> String {
    s.requirements
        .iter()
        .map(|r| {
            let op = match r.op {
                FieldOp::Equals => "=",
                FieldOp::NotEquals => "!=",
            };
            format!("{}{op}{}", r.field, escape(&r.value))
        })
        .collect::<Vec<_>>()
        .join(",")
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(5000))]

    #[test]
    fn any_text_is_a_label_selector_or_a_refusal_with_words(
        text in prop_oneof![any::<String>(), "[a-z!=(),/ .\\-_<>\\\\]{0,60}", "\\PC{0,300}"],
        obj in object(),
    ) {
        match LabelSelector::parse(&text) {
            Ok(s) => {
                let _ = s.matches(&obj);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn written_label_selectors_parse_back_to_their_requirements(
        (requirements, text) in label_selector(),
        obj in object(),
    ) {
        let parsed = LabelSelector::parse(&text);
        prop_assert_eq!(parsed.as_ref().map(|s| &s.requirements), Ok(&requirements), "{:?}", text);
        let parsed = parsed.unwrap();
        // Written out again, the same selector.
        prop_assert_eq!(LabelSelector::parse(&write_labels(&parsed)), Ok(parsed.clone()));
        // Each requirement and its opposite split the objects in two.
        for r in &requirements {
            let opposite = match &r.op {
                LabelOp::In(v) => LabelOp::NotIn(v.clone()),
                LabelOp::NotIn(v) => LabelOp::In(v.clone()),
                LabelOp::Exists => LabelOp::DoesNotExist,
                LabelOp::DoesNotExist => LabelOp::Exists,
            };
            let one = LabelSelector { requirements: vec![r.clone()] };
            let other = LabelSelector { requirements: vec![Requirement { key: r.key.clone(), op: opposite }] };
            prop_assert_ne!(one.matches(&obj), other.matches(&obj));
        }
    }

    #[test]
    fn mutated_label_selectors_parse_or_are_refused_and_read_back_the_same(
        (_, text) in label_selector(),
        edits in char_edits(),
        obj in object(),
    ) {
        let text = edit(&text, &edits);
        match LabelSelector::parse(&text) {
            Ok(s) => {
                let _ = s.matches(&obj);
                prop_assert_eq!(LabelSelector::parse(&write_labels(&s)), Ok(s.clone()), "{:?}", text);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn any_text_is_a_field_selector_or_a_refusal_with_words(
        text in prop_oneof![any::<String>(), "[a-zA-Z.!=,\\\\ ]{0,60}", "\\PC{0,300}"],
        rt in resource_type(),
        obj in object(),
    ) {
        match FieldSelector::parse(&text, rt) {
            Ok(s) => {
                prop_assert!(s.requirements.iter().all(|r| supported_fields(rt).contains(&r.field.as_str())));
                let _ = s.matches(&obj);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn written_field_selectors_parse_back_to_their_requirements(
        (rt, requirements, text) in field_selector(),
        edits in char_edits(),
        obj in object(),
    ) {
        let parsed = FieldSelector::parse(&text, rt);
        prop_assert_eq!(parsed.as_ref().map(|s| &s.requirements), Ok(&requirements), "{:?}", text);
        let _ = parsed.unwrap().matches(&obj);
        // Mutated: parsed or refused, and what parses reads back the same.
        let mutated = edit(&text, &edits);
        if let Ok(s) = FieldSelector::parse(&mutated, rt) {
            prop_assert_eq!(FieldSelector::parse(&write_fields(&s), rt), Ok(s.clone()), "{:?}", mutated);
            let _ = s.matches(&obj);
        }
    }
}
