//! `RawJson`: a JSON value kept as its original text, so native lines survive byte for byte.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// Verbatim JSON text. Serializes exactly as received (key order and all); equality compares
/// the JSON values, not the bytes.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Keeps any text: valid JSON verbatim, anything else as a JSON string holding it.
    pub fn from_any_text(text: &str) -> RawJson {
        match RawValue::from_string(text.to_owned()) {
            Ok(raw) => RawJson(raw),
            Err(_) => RawJson::from_value(&Value::String(text.to_owned())),
        }
    }

    /// Encodes a value.
    pub fn from_value(value: &Value) -> RawJson {
        match serde_json::value::to_raw_value(value) {
            Ok(raw) => RawJson(raw),
            // Encoding a `Value` cannot fail (its map keys are strings); keep a null if it ever did.
            Err(_) => RawJson(RawValue::NULL.to_owned()),
        }
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// Parses the text into a value (`Null` if it somehow is not JSON).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &RawJson) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// Goes through `Value` rather than `RawValue` so that it also works inside internally tagged
/// enums (which buffer their content); reading transcripts is not a hot path.
impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawJson, D::Error> {
        Value::deserialize(d).map(|v| RawJson::from_value(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_text_verbatim_and_wraps_non_json() {
        let raw = RawJson::from_any_text(r#"{"b":1,"a":2}"#);
        assert_eq!(raw.as_str(), r#"{"b":1,"a":2}"#);
        let bad = RawJson::from_any_text("{not json");
        assert_eq!(bad.to_value(), Value::String("{not json".into()));
    }
}
