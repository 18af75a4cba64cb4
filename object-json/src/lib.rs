//! A Kubernetes object as the bytes of its JSON, shared and never re-encoded.
//!
//! An object parsed into a `serde_json::Value` tree costs about twelve times
//! its JSON in memory (every map a B-tree, every string its own allocation).
//! The bridge keeps each object once, as this shared immutable text: its
//! Indexer, its snapshot store and every frame that carries the object hold
//! the same buffer, and writing a frame splices the text in as it is.
//! Whoever needs the fields parses them on demand ([`ObjectJson::parse`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use std::sync::Arc;

/// One object's JSON text: valid JSON, shared by reference count.
#[derive(Clone)]
pub struct ObjectJson(Arc<RawValue>);

impl ObjectJson {
    /// `null`: the object of a BOOKMARK or an ERROR event, or one the viewer
    /// has not fetched.
    pub fn null() -> Self {
        Self::from_raw(RawValue::NULL.to_owned())
    }

    /// The JSON text of `value`.
    pub fn from_value(value: &serde_json::Value) -> Self {
        let raw = serde_json::value::to_raw_value(value).expect("a JSON value always encodes");
        Self::from_raw(raw)
    }

    /// Takes JSON text already checked by a parser.
    pub fn from_raw(raw: Box<RawValue>) -> Self {
        ObjectJson(Arc::from(raw))
    }

    /// Copies text already checked by a parser: one allocation, the shared one.
    pub fn from_raw_ref(raw: &RawValue) -> Self {
        let text: Arc<str> = Arc::from(raw.get());
        // SAFETY: `RawValue` is `#[repr(transparent)]` over `str`, so an
        // `Arc<str>` holding valid JSON is an `Arc<RawValue>` (serde_json
        // turns its own `Box<str>` into a `Box<RawValue>` the same way).
        ObjectJson(unsafe { Arc::from_raw(Arc::into_raw(text) as *const RawValue) })
    }

    /// Checks `text` is JSON and keeps it as it is.
    pub fn from_text(text: String) -> serde_json::Result<Self> {
        RawValue::from_string(text).map(Self::from_raw)
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// Length of the JSON text in bytes.
    pub fn len(&self) -> usize {
        self.as_str().len()
    }

    /// Never empty: even `null` has four bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether this is `null` (no object).
    pub fn is_null(&self) -> bool {
        self.as_str() == "null"
    }

    /// The object as a tree, parsed now; `null` if the text were not JSON,
    /// which [`ObjectJson`]'s constructors rule out.
    pub fn parse(&self) -> serde_json::Value {
        serde_json::from_str(self.as_str()).unwrap_or(serde_json::Value::Null)
    }

    /// The object read into `T`, parsing only what `T` names.
    pub fn read<'a, T: Deserialize<'a>>(&'a self) -> serde_json::Result<T> {
        serde_json::from_str(self.as_str())
    }

    /// Whether two handles share one buffer (not a comparison of texts).
    pub fn same_buffer(&self, other: &ObjectJson) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for ObjectJson {
    fn default() -> Self {
        Self::null()
    }
}

impl From<serde_json::Value> for ObjectJson {
    fn from(value: serde_json::Value) -> Self {
        Self::from_value(&value)
    }
}

impl PartialEq for ObjectJson {
    fn eq(&self, other: &Self) -> bool {
        self.same_buffer(other) || self.as_str() == other.as_str()
    }
}

impl std::fmt::Debug for ObjectJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for ObjectJson {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ObjectJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ObjectJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Self::from_raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_is_spliced_into_a_frame_unchanged() {
        let object = ObjectJson::from_text(r#"{"kind":"Pod", "z":1,"a":2}"#.into()).unwrap();
        let frame = serde_json::to_string(&json!({"object": null})).unwrap();
        assert_eq!(frame, r#"{"object":null}"#);
        #[derive(Serialize, Deserialize)]
        struct Holder {
            object: ObjectJson,
        }
        let text = serde_json::to_string(&Holder {
            object: object.clone(),
        })
        .unwrap();
        assert_eq!(text, r#"{"object":{"kind":"Pod", "z":1,"a":2}}"#);
        let back: Holder = serde_json::from_str(&text).unwrap();
        assert_eq!(back.object, object);
        assert_eq!(back.object.parse()["a"], 2);
    }

    #[test]
    fn a_borrowed_text_is_kept_as_it_is() {
        let raw = RawValue::from_string(r#"{"a": [1, 2]}"#.into()).unwrap();
        let o = ObjectJson::from_raw_ref(&raw);
        assert_eq!(o.as_str(), raw.get());
        assert_eq!(o.parse()["a"][1], 2);
    }

    #[test]
    fn clones_share_one_buffer() {
        let a = ObjectJson::from_value(&json!({"kind": "ConfigMap"}));
        let b = a.clone();
        assert!(a.same_buffer(&b));
        assert!(!a.same_buffer(&ObjectJson::from_value(&json!({"kind": "ConfigMap"}))));
    }

    #[test]
    fn what_is_not_json_is_refused() {
        assert!(ObjectJson::from_text("{".into()).is_err());
        assert!(ObjectJson::null().is_null());
    }
}
