//! The payload marker protocol: finding `{"$text": ..}`, `{"$sealed": ..}`
//! markers anywhere in a JSON tree and building / parsing them.
//!
//! Walks are iterative (explicit stack): payloads built in memory are not
//! bound by serde_json's parse depth limit, and a deep tree must not overflow
//! the stack of an async task.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::data_key::{NONCE_LEN, TAG_LEN};
use crate::CryptoError;

pub(crate) const TEXT: &str = "$text";
/// A clear JSON value of the subject's that is not prose: tags, a session
/// id, a client's message id. Sealed like text (its JSON encoding is the
/// plaintext) and opened back into the same JSON value.
pub(crate) const VALUE: &str = "$value";
/// Markers that are sealed: what the store refuses to see in the clear.
pub(crate) const CLEAR: [&str; 2] = [TEXT, VALUE];
/// The `enc` field of a sealed marker whose plaintext is a JSON value.
pub(crate) const ENC_JSON: &str = "json";
pub(crate) const SEALED: &str = "$sealed";
pub(crate) const ERASED: &str = "$erased";
/// The only algorithm sealed markers carry (JOSE's name for AES-256-GCM).
pub(crate) const ALG: &str = "A256GCM";

/// The value of a marker `name` when `v` is one: an object with exactly that
/// one key.
fn marker_value<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get(name),
        _ => None,
    }
}

/// True when the tree still holds a clear `{"$text": ..}` marker (whatever
/// its value: a malformed clear marker is still not sealed). The event store
/// refuses to append such a payload.
pub fn contains_clear_text(payload: &Value) -> bool {
    let mut stack = vec![payload];
    while let Some(v) = stack.pop() {
        if CLEAR.iter().any(|name| marker_value(v, name).is_some()) {
            return true;
        }
        match v {
            Value::Object(m) => {
                // Sealed and erased markers are leaves: their insides are
                // protocol fields, never content.
                if m.len() == 1 && (m.contains_key(SEALED) || m.contains_key(ERASED)) {
                    continue;
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    false
}

/// Every node of the tree that is a marker named in `names`, as a mutable
/// reference to the marker object itself (so it can be replaced whole).
/// Does not descend into any marker.
pub(crate) fn find_markers_mut<'a>(payload: &'a mut Value, names: &[&str]) -> Vec<&'a mut Value> {
    let mut out = Vec::new();
    let mut stack = vec![payload];
    while let Some(v) = stack.pop() {
        if names.iter().any(|name| marker_value(v, name).is_some()) {
            out.push(v);
            continue;
        }
        match v {
            Value::Object(m) => {
                if m.len() == 1
                    && [TEXT, VALUE, SEALED, ERASED]
                        .iter()
                        .any(|k| m.contains_key(*k))
                {
                    continue;
                }
                stack.extend(m.values_mut());
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            _ => {}
        }
    }
    out
}

/// What a clear marker seals: the text of `{"$text": s}`, or the JSON
/// encoding of `{"$value": v}`.
pub(crate) enum Clear<'a> {
    Text(&'a str),
    Json(String),
}

impl Clear<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Clear::Text(s) => s.as_bytes(),
            Clear::Json(s) => s.as_bytes(),
        }
    }

    pub(crate) fn is_json(&self) -> bool {
        matches!(self, Clear::Json(_))
    }
}

/// The plaintext of a clear marker.
pub(crate) fn clear_text(marker: &Value) -> Result<Clear<'_>, CryptoError> {
    if let Some(v) = marker_value(marker, VALUE) {
        return Ok(Clear::Json(v.to_string()));
    }
    match marker_value(marker, TEXT) {
        Some(Value::String(s)) => Ok(Clear::Text(s)),
        _ => Err(CryptoError::MalformedMarker("$text value must be a string")),
    }
}

/// The parts of a `{"$sealed": {..}}` marker.
pub(crate) struct Sealed {
    /// The plaintext is a JSON value (`"enc": "json"`), opened as `$value`.
    pub json: bool,
    pub kid: String,
    pub nonce: [u8; NONCE_LEN],
    pub ct: Vec<u8>,
}

pub(crate) fn parse_sealed(marker: &Value) -> Result<Sealed, CryptoError> {
    let inner = match marker_value(marker, SEALED) {
        Some(Value::Object(m)) => m,
        _ => {
            return Err(CryptoError::MalformedMarker(
                "$sealed value must be an object",
            ))
        }
    };
    let field = |name: &'static str| -> Result<&str, CryptoError> {
        inner
            .get(name)
            .and_then(Value::as_str)
            .ok_or(CryptoError::MalformedMarker(
                "$sealed needs string fields alg, kid, nonce, ct",
            ))
    };
    let alg = field("alg")?;
    if alg != ALG {
        // Only a short prefix is echoed: the value comes from stored data.
        return Err(CryptoError::UnsupportedAlgorithm(
            alg.chars().take(32).collect(),
        ));
    }
    let kid = field("kid")?;
    if kid.is_empty() {
        return Err(CryptoError::MalformedMarker("$sealed kid is empty"));
    }
    let nonce: [u8; NONCE_LEN] = B64
        .decode(field("nonce")?)
        .ok()
        .and_then(|n| n.try_into().ok())
        .ok_or(CryptoError::MalformedMarker(
            "$sealed nonce must be 12 bytes of base64",
        ))?;
    let ct = B64
        .decode(field("ct")?)
        .ok()
        .filter(|ct| ct.len() >= TAG_LEN)
        .ok_or(CryptoError::MalformedMarker(
            "$sealed ct must be base64 of ciphertext and tag",
        ))?;
    let json = match inner.get("enc") {
        None => false,
        Some(Value::String(enc)) if enc == ENC_JSON => true,
        Some(_) => return Err(CryptoError::MalformedMarker("$sealed enc must be \"json\"")),
    };
    Ok(Sealed {
        json,
        kid: kid.to_owned(),
        nonce,
        ct,
    })
}

pub(crate) fn sealed_marker(kid: &str, nonce: &[u8; NONCE_LEN], ct: &[u8], json: bool) -> Value {
    let mut inner = Map::new();
    inner.insert("alg".into(), Value::from(ALG));
    if json {
        inner.insert("enc".into(), Value::from(ENC_JSON));
    }
    inner.insert("kid".into(), Value::from(kid));
    inner.insert("nonce".into(), Value::from(B64.encode(nonce)));
    inner.insert("ct".into(), Value::from(B64.encode(ct)));
    single(SEALED, Value::Object(inner))
}

pub(crate) fn text_marker(text: String) -> Value {
    single(TEXT, Value::String(text))
}

pub(crate) fn value_marker(value: Value) -> Value {
    single(VALUE, value)
}

pub(crate) fn erased_marker() -> Value {
    single(ERASED, Value::Bool(true))
}

fn single(name: &str, value: Value) -> Value {
    let mut m = Map::new();
    m.insert(name.into(), value);
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn contains_clear_text_finds_markers_anywhere() {
        assert!(contains_clear_text(&json!({"$text": "hi"})));
        assert!(contains_clear_text(
            &json!({"a": [1, {"b": {"$text": "deep"}}]})
        ));
        // A malformed clear marker still counts: it is not sealed.
        assert!(contains_clear_text(&json!({"a": {"$text": 5}})));

        assert!(contains_clear_text(&json!({"tags": {"$value": ["a"]}})));
        assert!(!contains_clear_text(&json!({"a": "plain", "b": [1, 2]})));
        // Two keys: not a marker, just an object with a "$text" field.
        assert!(!contains_clear_text(&json!({"$text": "x", "other": 1})));
        assert!(!contains_clear_text(&json!({"a": {"$erased": true}})));
        assert!(!contains_clear_text(&json!({"a": {"$sealed": {
            "alg": "A256GCM", "kid": "k", "nonce": "", "ct": ""
        }}})));
    }

    #[test]
    fn deep_trees_do_not_overflow_the_stack() {
        let mut v = json!({"$text": "bottom"});
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert!(contains_clear_text(&v));
        assert_eq!(find_markers_mut(&mut v, &[TEXT]).len(), 1);
        // Dropping a 100k-deep Value recurses in serde_json's Drop; unwind it
        // by hand so the test itself does not overflow.
        while let Value::Array(mut a) = v {
            v = a.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn sealed_marker_round_trips_and_rejects_bad_shapes() {
        let m = sealed_marker("k1", &[3; NONCE_LEN], &[9; 20], false);
        let p = parse_sealed(&m).unwrap();
        assert_eq!(
            (p.kid.as_str(), p.nonce, p.ct),
            ("k1", [3; NONCE_LEN], vec![9; 20])
        );

        let code = |v: Value| parse_sealed(&v).err().map(|e| e.code());
        let good = m["$sealed"].clone();
        let with = |k: &str, val: Value| {
            let mut inner = good.clone();
            inner[k] = val;
            json!({ "$sealed": inner })
        };
        assert_eq!(
            code(with("alg", json!("A128GCM"))),
            Some("unsupported_algorithm")
        );
        assert_eq!(code(with("kid", json!(""))), Some("malformed_marker"));
        assert_eq!(code(with("nonce", json!("AAAA"))), Some("malformed_marker"));
        assert_eq!(code(with("ct", json!("AAAA"))), Some("malformed_marker"));
        assert_eq!(code(with("ct", json!(17))), Some("malformed_marker"));
        assert_eq!(code(json!({"$sealed": "x"})), Some("malformed_marker"));
    }
}
