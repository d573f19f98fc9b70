//! `SubjectText`: content that belongs to a data subject.
//!
//! Every piece of subject content in an event payload has this type, and it
//! serializes as a marker object that the crypto layer recognizes anywhere in
//! a JSON tree: `{"$text": "..."}` in the clear (in memory only),
//! `{"$sealed": {...}}` once encrypted with the subject's key, and
//! `{"$erased": true}` when that key has been destroyed. Typing content this
//! way is what makes "subject content is stored encrypted" checkable: the
//! event store refuses a payload that still holds a `$text` marker.

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, PartialEq, Eq)]
pub enum SubjectText {
    Text(String),
    /// The subject's key was destroyed: the content is gone for good.
    Erased,
}

impl SubjectText {
    pub fn new(text: impl Into<String>) -> Self {
        SubjectText::Text(text.into())
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            SubjectText::Text(text) => Some(text),
            SubjectText::Erased => None,
        }
    }

    pub fn is_erased(&self) -> bool {
        matches!(self, SubjectText::Erased)
    }
}

/// Debug never prints the content, so a stray `{:?}` cannot leak it to logs.
impl fmt::Debug for SubjectText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubjectText::Text(text) => write!(f, "SubjectText(<{} bytes>)", text.len()),
            SubjectText::Erased => f.write_str("SubjectText(<erased>)"),
        }
    }
}

impl Serialize for SubjectText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        match self {
            SubjectText::Text(text) => map.serialize_entry("$text", text)?,
            SubjectText::Erased => map.serialize_entry("$erased", &true)?,
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SubjectText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        let object = value
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| D::Error::custom("subject text must be a marker object"))?;
        if let Some(text) = object.get("$text") {
            return text
                .as_str()
                .map(|t| SubjectText::Text(t.to_owned()))
                .ok_or_else(|| D::Error::custom("$text must be a string"));
        }
        if object.get("$erased") == Some(&serde_json::Value::Bool(true)) {
            return Ok(SubjectText::Erased);
        }
        if object.contains_key("$sealed") {
            return Err(D::Error::custom(
                "subject text is still sealed: open the payload before decoding",
            ));
        }
        Err(D::Error::custom("unknown subject text marker"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip() {
        let text = SubjectText::new("I live in Lyon");
        let json = serde_json::to_value(&text).unwrap();
        assert_eq!(json, serde_json::json!({"$text": "I live in Lyon"}));
        assert_eq!(serde_json::from_value::<SubjectText>(json).unwrap(), text);
        let erased = serde_json::to_value(SubjectText::Erased).unwrap();
        assert_eq!(erased, serde_json::json!({"$erased": true}));
        assert!(serde_json::from_value::<SubjectText>(erased)
            .unwrap()
            .is_erased());
    }

    #[test]
    fn sealed_content_cannot_be_decoded_by_accident() {
        let sealed = serde_json::json!({"$sealed": {"kid": "k", "ct": "x"}});
        assert!(serde_json::from_value::<SubjectText>(sealed).is_err());
    }

    #[test]
    fn debug_hides_content() {
        let text = SubjectText::new("secret thing");
        assert!(!format!("{text:?}").contains("secret"));
    }
}
