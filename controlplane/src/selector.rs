//! Label and field selectors, parsed as the apiserver parses them.
//!
//! Label selectors support `key`, `!key`, `key=value`, `key==value`,
//! `key!=value`, `key in (a,b)` and `key notin (a,b)`, joined by commas (a
//! logical AND). As in Kubernetes, `!=` and `notin` also match objects that do
//! not carry the label at all. The set-based `>` and `<` operators are not
//! supported and are reported as a parse error.
//!
//! Field selectors support `field=value`, `field==value` and `field!=value`;
//! which fields a resource supports is decided by [`supported_fields`]. A field
//! missing from an object has the value "" (so `spec.nodeName=` selects the
//! unscheduled pods, as the scheduler's informer does).
//!
//! Parsing never panics, whatever the input: errors are values.

use crate::object;
use crate::resource::ResourceType;
use serde_json::Value;

/// Longest label value and name part of a label key, as the apiserver
/// validates them (a DNS-1123 label's length).
pub const MAX_LABEL_PART: usize = 63;

/// Longest prefix of a label key (a DNS-1123 subdomain's length).
pub const MAX_LABEL_PREFIX: usize = 253;

/// Why a selector could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

/// A label requirement's operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelOp {
    /// `key=value`, `key==value` and `key in (..)`.
    In(Vec<String>),
    /// `key!=value` and `key notin (..)`.
    NotIn(Vec<String>),
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: LabelOp,
}

/// A parsed label selector: every requirement must hold. Empty selects all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a selector as given in `?labelSelector=`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        Parser::new(input).selector()
    }

    /// Whether it selects every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let value = object::labels(obj)
                .find(|(k, _)| *k == r.key)
                .map(|(_, v)| v);
            match (&r.op, value) {
                (LabelOp::In(values), Some(v)) => values.iter().any(|x| x == v),
                (LabelOp::In(_), None) => false,
                (LabelOp::NotIn(values), Some(v)) => !values.iter().any(|x| x == v),
                (LabelOp::NotIn(_), None) => true,
                (LabelOp::Exists, v) => v.is_some(),
                (LabelOp::DoesNotExist, v) => v.is_none(),
            }
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Open,
    Close,
    Comma,
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    lex_error: Option<String>,
}

impl Parser {
    fn new(input: &str) -> Self {
        let mut tokens = Vec::new();
        let mut lex_error = None;
        let mut chars = input.chars().peekable();
        while let Some(&c) = chars.peek() {
            match c {
                c if c.is_whitespace() => {
                    chars.next();
                }
                '(' | ')' | ',' => {
                    chars.next();
                    tokens.push(match c {
                        '(' => Token::Open,
                        ')' => Token::Close,
                        _ => Token::Comma,
                    });
                }
                '=' => {
                    chars.next();
                    if chars.peek() == Some(&'=') {
                        chars.next();
                        tokens.push(Token::DoubleEq);
                    } else {
                        tokens.push(Token::Eq);
                    }
                }
                '!' => {
                    chars.next();
                    if chars.peek() == Some(&'=') {
                        chars.next();
                        tokens.push(Token::NotEq);
                    } else {
                        tokens.push(Token::Not);
                    }
                }
                '<' | '>' => {
                    chars.next();
                    lex_error.get_or_insert_with(|| format!("operator {c:?} is not supported"));
                }
                _ => {
                    let mut ident = String::new();
                    while let Some(&c) = chars.peek() {
                        if c.is_whitespace() || "(),=!<>".contains(c) {
                            break;
                        }
                        ident.push(c);
                        chars.next();
                    }
                    tokens.push(Token::Ident(ident));
                }
            }
        }
        Parser {
            tokens,
            pos: 0,
            lex_error,
        }
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn selector(mut self) -> Result<LabelSelector, SelectorError> {
        if let Some(e) = self.lex_error.take() {
            return Err(SelectorError(e));
        }
        let mut requirements = Vec::new();
        if self.tokens.is_empty() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            requirements.push(self.requirement()?);
            match self.next() {
                None => return Ok(LabelSelector { requirements }),
                Some(Token::Comma) => {}
                Some(t) => return Err(SelectorError(format!("found {t:?}, expected ','"))),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek() == Some(&Token::Not) {
            self.next();
            let key = self.key()?;
            return Ok(Requirement {
                key,
                op: LabelOp::DoesNotExist,
            });
        }
        let key = self.key()?;
        let op = match self.peek() {
            None | Some(Token::Comma) => {
                return Ok(Requirement {
                    key,
                    op: LabelOp::Exists,
                });
            }
            Some(_) => self.next().unwrap_or(Token::Comma),
        };
        let op = match op {
            Token::Eq | Token::DoubleEq => LabelOp::In(vec![self.value()?]),
            Token::NotEq => LabelOp::NotIn(vec![self.value()?]),
            Token::Ident(word) if word == "in" => LabelOp::In(self.set()?),
            Token::Ident(word) if word == "notin" => LabelOp::NotIn(self.set()?),
            t => {
                return Err(SelectorError(format!(
                    "found {t:?}, expected one of '=', '==', '!=', 'in', 'notin'"
                )));
            }
        };
        Ok(Requirement { key, op })
    }

    fn key(&mut self) -> Result<String, SelectorError> {
        match self.next() {
            Some(Token::Ident(key)) => {
                validate_key(&key)?;
                Ok(key)
            }
            Some(t) => Err(SelectorError(format!("found {t:?}, expected a label key"))),
            None => Err(SelectorError("expected a label key".into())),
        }
    }

    /// A value after `=`, `==` or `!=`; it may be empty (`app=`).
    fn value(&mut self) -> Result<String, SelectorError> {
        match self.peek() {
            Some(Token::Ident(_)) => match self.next() {
                Some(Token::Ident(v)) => {
                    validate_value(&v)?;
                    Ok(v)
                }
                _ => Err(SelectorError("expected a label value".into())),
            },
            None | Some(Token::Comma) => Ok(String::new()),
            Some(t) => Err(SelectorError(format!(
                "found {t:?}, expected a label value"
            ))),
        }
    }

    fn set(&mut self) -> Result<Vec<String>, SelectorError> {
        if self.next() != Some(Token::Open) {
            return Err(SelectorError("expected '(' after 'in' or 'notin'".into()));
        }
        let mut values = Vec::new();
        loop {
            match self.next() {
                Some(Token::Ident(v)) => {
                    validate_value(&v)?;
                    values.push(v);
                    match self.next() {
                        Some(Token::Comma) => {}
                        Some(Token::Close) => break,
                        _ => return Err(SelectorError("expected ',' or ')' in a set".into())),
                    }
                }
                Some(Token::Close) if values.is_empty() => break,
                _ => return Err(SelectorError("expected a value or ')' in a set".into())),
            }
        }
        if values.is_empty() {
            return Err(SelectorError(
                "for 'in', 'notin' operators, values set can't be empty".into(),
            ));
        }
        Ok(values)
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// A DNS-1123 label part of a name: alphanumerics, `-`, `_`, `.`, starting and
/// ending alphanumeric, at most [`MAX_LABEL_PART`] characters (empty allowed
/// only where `allow_empty`).
fn validate_name_part(part: &str, what: &str, allow_empty: bool) -> Result<(), SelectorError> {
    if part.is_empty() {
        return if allow_empty {
            Ok(())
        } else {
            Err(SelectorError(format!("{what} must not be empty")))
        };
    }
    let ok = part.len() <= MAX_LABEL_PART
        && part.chars().all(is_name_char)
        && part.starts_with(|c: char| c.is_ascii_alphanumeric())
        && part.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(SelectorError(format!(
            "invalid {what} {part:?}: must be {MAX_LABEL_PART} characters or less, begin and end with an alphanumeric character, with '-', '_', '.' or alphanumerics between"
        )))
    }
}

fn validate_key(key: &str) -> Result<(), SelectorError> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= MAX_LABEL_PREFIX
            && prefix.split('.').all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !p.starts_with('-')
                    && !p.ends_with('-')
            });
        if !ok {
            return Err(SelectorError(format!(
                "invalid label key prefix {prefix:?}: must be a DNS subdomain"
            )));
        }
    }
    validate_name_part(name, "label key", false)
}

fn validate_value(value: &str) -> Result<(), SelectorError> {
    validate_name_part(value, "label value", true)
}

/// A field requirement's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Equals,
    NotEquals,
}

/// One requirement of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted path, as in `spec.nodeName`.
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

/// A parsed field selector: every requirement must hold. Empty selects all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub requirements: Vec<FieldRequirement>,
}

/// Why a field selector was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    #[error("invalid selector: {0}")]
    Syntax(String),
    /// The apiserver's words for a field the resource does not index.
    #[error("field label not supported: {0}")]
    Unsupported(String),
}

/// Fields a resource can be selected on: `metadata.name` and
/// `metadata.namespace` for every type, plus `spec.nodeName` and
/// `status.phase` for pods (what the scheduler and kubelet select on), and
/// the `involvedObject` fields, `reason` and `type` for events (what
/// `kubectl describe` selects an object's events by).
pub fn supported_fields(rt: ResourceType) -> &'static [&'static str] {
    match rt.plural {
        "pods" => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "status.phase",
        ],
        "events" => &[
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "type",
        ],
        _ => &["metadata.name", "metadata.namespace"],
    }
}

impl FieldSelector {
    /// Parses `?fieldSelector=` for a resource type, refusing fields it does
    /// not support. `\,`, `\=` and `\\` escape those characters in values.
    pub fn parse(input: &str, rt: ResourceType) -> Result<Self, FieldSelectorError> {
        let mut requirements = Vec::new();
        for term in split_unescaped(input, ',') {
            if term.trim().is_empty() {
                continue;
            }
            let (field, op, value) = if let Some(i) = find_unescaped(&term, "!=") {
                (&term[..i], FieldOp::NotEquals, &term[i + 2..])
            } else if let Some(i) = find_unescaped(&term, "==") {
                (&term[..i], FieldOp::Equals, &term[i + 2..])
            } else if let Some(i) = find_unescaped(&term, "=") {
                (&term[..i], FieldOp::Equals, &term[i + 1..])
            } else {
                return Err(FieldSelectorError::Syntax(format!(
                    "{term:?}: expected field=value, field==value or field!=value"
                )));
            };
            let field = field.trim();
            if !supported_fields(rt).contains(&field) {
                return Err(FieldSelectorError::Unsupported(field.to_string()));
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                op,
                value: unescape(value),
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether it selects every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the object's fields satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let actual = r
                .field
                .split('.')
                .try_fold(obj, |v, key| v.get(key))
                .and_then(Value::as_str)
                .unwrap_or("");
            (actual == r.value) == (r.op == FieldOp::Equals)
        })
    }
}

/// Index of `pat` in `s`, skipping characters escaped by a backslash.
fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if s[i..].starts_with(pat) {
            return Some(i);
        }
    }
    None
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in s.chars() {
        let last = parts.last_mut().expect("starts with one part");
        if escaped {
            last.push(c);
            escaped = false;
        } else if c == '\\' {
            last.push(c);
            escaped = true;
        } else if c == sep {
            parts.push(String::new());
        } else {
            last.push(c);
        }
    }
    parts
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{CONFIGMAPS, PODS};
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "default", "labels": labels}})
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap()
    }

    #[test]
    fn equality_operators() {
        let web = obj(json!({"app": "web", "tier": "front"}));
        assert!(sel("app=web").matches(&web));
        assert!(sel("app==web").matches(&web));
        assert!(!sel("app!=web").matches(&web));
        assert!(sel("app=web,tier=front").matches(&web));
        assert!(!sel("app=web,tier=back").matches(&web));
        assert!(sel(" app = web , tier != back ").matches(&web));
        assert!(sel("").matches(&web));
    }

    #[test]
    fn not_equal_and_notin_match_objects_without_the_label() {
        let bare = obj(json!({}));
        assert!(sel("app!=web").matches(&bare));
        assert!(sel("app notin (web,db)").matches(&bare));
        assert!(!sel("app in (web,db)").matches(&bare));
        assert!(!sel("app=web").matches(&bare));
    }

    #[test]
    fn set_operators() {
        let db = obj(json!({"app": "db"}));
        assert!(sel("app in (web, db)").matches(&db));
        assert!(!sel("app notin (web,db)").matches(&db));
        assert!(sel("app notin (web)").matches(&db));
    }

    #[test]
    fn existence_operators() {
        let db = obj(json!({"app": "db", "example.com/team": "x"}));
        assert!(sel("app").matches(&db));
        assert!(!sel("!app").matches(&db));
        assert!(sel("!tier").matches(&db));
        assert!(sel("example.com/team,!tier").matches(&db));
    }

    #[test]
    fn empty_value_selects_empty_labels() {
        let empty = obj(json!({"app": ""}));
        assert!(sel("app=").matches(&empty));
        assert!(!sel("app=").matches(&obj(json!({"app": "web"}))));
    }

    #[test]
    fn malformed_selectors_are_errors() {
        for bad in [
            "app=web,",
            ",app",
            "app in ()",
            "app in web",
            "app in (web",
            "app web",
            "=web",
            "app>1",
            "app=-bad",
            "app==web==db",
            "!",
            "Bad Key=1",
            "-app",
            "x/y/z",
            "UPPER.example/app=1",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn field_selectors() {
        let pod = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let unscheduled = json!({"metadata": {"name": "q", "namespace": "default"}, "spec": {}});
        let f = |s| FieldSelector::parse(s, PODS).unwrap();
        assert!(f("metadata.name=p").matches(&pod));
        assert!(f("spec.nodeName==n1,status.phase=Running").matches(&pod));
        assert!(f("spec.nodeName=").matches(&unscheduled));
        assert!(!f("spec.nodeName=").matches(&pod));
        assert!(f("spec.nodeName!=").matches(&pod));
        assert!(f("").matches(&pod));
        assert_eq!(
            FieldSelector::parse("spec.nodeName=n1", CONFIGMAPS),
            Err(FieldSelectorError::Unsupported("spec.nodeName".into()))
        );
        assert!(matches!(
            FieldSelector::parse("metadata.name", PODS),
            Err(FieldSelectorError::Syntax(_))
        ));
        let escaped = FieldSelector::parse(r"metadata.name=a\,b", PODS).unwrap();
        assert_eq!(escaped.requirements[0].value, "a,b");
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn label_parser_never_panics(input in any::<String>()) {
                let _ = LabelSelector::parse(&input);
            }

            #[test]
            fn label_parser_never_panics_on_selector_like_input(
                input in r"[a-z!=(), /.\-_in]{0,40}"
            ) {
                if let Ok(s) = LabelSelector::parse(&input) {
                    let _ = s.matches(&json!({"metadata": {"labels": {"a": "b"}}}));
                }
            }

            #[test]
            fn field_parser_never_panics(input in any::<String>()) {
                let _ = FieldSelector::parse(&input, PODS);
            }

            #[test]
            fn equality_selector_round_trips(
                key in "[a-z][a-z0-9]{0,10}",
                value in "[a-z0-9]{0,10}",
            ) {
                let s = LabelSelector::parse(&format!("{key}={value}")).unwrap();
                let labelled = json!({"metadata": {"labels": {key.clone(): value.clone()}}});
                prop_assert!(s.matches(&labelled));
                let negated = LabelSelector::parse(&format!("{key}!={value}")).unwrap();
                prop_assert!(!negated.matches(&labelled));
            }
        }
    }
}
