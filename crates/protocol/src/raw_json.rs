//! `RawJson`: a JSON value kept as its original text, so native lines survive byte for byte.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// Deepest nesting kept verbatim. An event wraps its raw value in two more levels (and a batch
/// message in more), and serde_json refuses documents nested over 128 deep: deeper text is kept
/// as a JSON string instead, so the event still reads back from a transcript (found by fuzzing,
/// `docs/robustness.md`).
pub const MAX_VERBATIM_DEPTH: usize = 64;

/// Verbatim JSON text. Serializes exactly as received (key order and all); equality compares
/// the JSON values, not the bytes.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Keeps any text: valid JSON verbatim, anything else as a JSON string holding it.
    /// Text that would not read back is kept as a string too: nested deeper than
    /// [`MAX_VERBATIM_DEPTH`], or with a number out of range (`1e400`: `RawValue` accepts it,
    /// reading it back into a value does not).
    pub fn from_any_text(text: &str) -> RawJson {
        let shape = shape(text);
        // Parsing into a value costs as much as the decode: only when a number looks odd.
        let readable = || !shape.odd_number || serde_json::from_str::<Value>(text).is_ok();
        match RawValue::from_string(text.to_owned()) {
            Ok(raw) if shape.depth <= MAX_VERBATIM_DEPTH && readable() => RawJson(raw),
            _ => RawJson::string(text),
        }
    }

    fn string(text: &str) -> RawJson {
        RawJson::encode(&Value::String(text.to_owned()))
    }

    /// Encodes a value; one nested deeper than [`MAX_VERBATIM_DEPTH`] is kept as its JSON text
    /// in a string.
    pub fn from_value(value: &Value) -> RawJson {
        let encoded = RawJson::encode(value);
        if shape(encoded.as_str()).depth > MAX_VERBATIM_DEPTH {
            return RawJson::string(encoded.as_str());
        }
        encoded
    }

    fn encode(value: &Value) -> RawJson {
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

/// What decides whether JSON text reads back: how deep arrays and objects nest, and whether it
/// has a number that might be out of range (an exponent or over 300 digits). Brackets and
/// digits inside strings do not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    depth: usize,
    odd_number: bool,
}

fn shape(text: &str) -> Shape {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut digits, mut odd_number) = (0usize, 0usize, 0usize, false);
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            b'0'..=b'9' => {
                digits += 1;
                odd_number |= digits > 300;
            }
            b'e' | b'E' if digits > 0 => odd_number = true,
            b'.' | b'-' | b'+' => {}
            _ => {
                digits = 0;
                match b {
                    // A string: jump to its closing quote (strings are most of the text).
                    b'"' => i = string_end(bytes, i),
                    b'[' | b'{' => {
                        depth += 1;
                        deepest = deepest.max(depth);
                    }
                    b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
    }
    Shape { depth: deepest, odd_number }
}

/// The index just past the closing quote of the string whose contents start at `from`.
fn string_end(bytes: &[u8], mut from: usize) -> usize {
    loop {
        let Some(rest) = bytes.get(from..) else { return bytes.len() };
        match memchr::memchr2(b'"', b'\\', rest) {
            None => return bytes.len(),
            Some(at) if rest[at] == b'\\' => from += at + 2,
            Some(at) => return from + at + 1,
        }
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

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn shape_ignores_strings_and_flags_odd_numbers() {
        let plain = |depth| Shape { depth, odd_number: false };
        assert_eq!(shape(r#"{"a":["[[[{\"1e9",{}],"b":true,"c":-1.5}"#), plain(3));
        assert_eq!(shape("1"), plain(0));
        assert_eq!(shape("[1e400]"), Shape { depth: 1, odd_number: true });
        assert_eq!(shape(&"9".repeat(301)), Shape { depth: 0, odd_number: true });
    }

    /// Regression (fuzzing): a native line nested 127 deep is valid JSON and was kept verbatim,
    /// but the event holding it is nested deeper than serde_json reads, so a transcript read
    /// skipped the event and the line was lost.
    #[test]
    fn deeply_nested_text_is_kept_as_a_string_so_an_event_reads_back() {
        for depth in [MAX_VERBATIM_DEPTH, MAX_VERBATIM_DEPTH + 1, 127] {
            let text = nested(depth);
            let raw = RawJson::from_any_text(&text);
            let event = serde_json::json!({"kind": {"type": "raw", "native": raw}});
            let line = serde_json::to_string(&event).unwrap_or_default();
            let back: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            assert!(back.get("kind").is_some(), "depth {depth} does not read back");
            let kept = match raw.to_value() {
                Value::String(s) => s,
                other => other.to_string(),
            };
            assert_eq!(kept, text, "depth {depth}: text not kept");
        }
        // Regression (fuzzing): a number out of range is valid JSON to `RawValue` only.
        let huge = r#"{"emittedAtMs":17e5982106192}"#;
        let raw = RawJson::from_any_text(huge);
        let line = serde_json::to_string(&raw).unwrap_or_default();
        assert!(serde_json::from_str::<RawJson>(&line).is_ok(), "{line} does not read back");
        assert_eq!(raw.to_value(), Value::String(huge.into()));
        let value: Value = serde_json::from_str(&nested(127)).unwrap_or(Value::Null);
        let raw = RawJson::from_value(&value);
        assert_eq!(raw.to_value(), Value::String(nested(127)));
    }
}
