//! The protocol's JSON Schema, generated from these Rust types with `schemars`; fails on drift.
//!
//! `docs/protocol.v<PROTOCOL_VERSION>.schema.json` is committed for clients written in other
//! languages. After changing a wire type run
//! `NUCLEIC_UPDATE_SCHEMA=1 cargo test -p nucleic-protocol json_schema` to rewrite it.

use std::path::PathBuf;

use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::*;

/// The schema document: `ClientMessage` and `HostMessage` (and everything they hold) under
/// `$defs`, the root accepting either.
pub(crate) fn render() -> String {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let client = generator.subschema_for::<ClientMessage>();
    let host = generator.subschema_for::<HostMessage>();
    let definitions: serde_json::Map<String, Value> = generator.take_definitions(true);
    let document = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": format!("https://nucleic.invalid/protocol.v{PROTOCOL_VERSION}.schema.json"),
        "title": "Nucleic sync protocol",
        "description": "Every message between a Nucleic host and its clients (docs/protocol.md). \
                        Generated from crates/protocol; do not edit.",
        "protocolVersion": PROTOCOL_VERSION,
        "anyOf": [client, host],
        "$defs": definitions,
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

/// Where the committed schema lives.
pub(crate) fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../docs/protocol.v{PROTOCOL_VERSION}.schema.json"))
}

#[test]
fn json_schema_matches_the_rust_types() {
    let path = schema_path();
    let fresh = render();
    if std::env::var_os("NUCLEIC_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is out of date with the Rust wire types: run \
         `NUCLEIC_UPDATE_SCHEMA=1 cargo test -p nucleic-protocol json_schema` and commit the result",
        path.display()
    );
}

/// The digest of a schema's shape: the document without its descriptions (wording is not
/// shape), its object keys sorted (canonical whatever order serde_json keeps: the workspace
/// builds it with `preserve_order`), hashed; the first 16 hex digits.
fn shape_digest(mut schema: Value) -> String {
    use sha2::Digest;
    fn canonical(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.shift_remove("description");
                map.values_mut().for_each(canonical);
                map.sort_keys();
            }
            Value::Array(items) => items.iter_mut().for_each(canonical),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    canonical(&mut schema);
    let hash = sha2::Sha256::digest(schema.to_string().as_bytes());
    hash.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn rendered() -> Value {
    serde_json::from_str(&render()).unwrap()
}

#[test]
fn schema_digest_matches_the_rust_types() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/schema.digest");
    let fresh = shape_digest(rendered());
    if std::env::var_os("NUCLEIC_UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, format!("{fresh}\n")).unwrap();
        return;
    }
    assert!(
        SCHEMA_DIGEST == fresh,
        "{} ({SCHEMA_DIGEST}) is out of date with the wire types ({fresh}): run \
         `NUCLEIC_UPDATE_SCHEMA=1 cargo test -p nucleic-protocol json_schema` and commit the result",
        path.display()
    );
}

#[test]
fn the_schema_digest_moves_with_shape_not_wording() {
    let original = shape_digest(rendered());
    let mut reworded = rendered();
    reworded["$defs"]["HostMessage"]["description"] = json!("reworded");
    assert_eq!(shape_digest(reworded), original);
    let mut reshaped = rendered();
    reshaped["$defs"]["Extra"] = json!({"type": "string"});
    assert_ne!(shape_digest(reshaped), original);
}

#[test]
fn the_schema_digest_does_not_depend_on_key_order() {
    fn reverse(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                Value::Object(map.iter().rev().map(|(k, v)| (k.clone(), reverse(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(reverse).collect()),
            other => other.clone(),
        }
    }
    let original = shape_digest(rendered());
    let reversed = reverse(&rendered());
    assert_ne!(reversed.to_string(), rendered().to_string(), "the keys were reordered");
    assert_eq!(shape_digest(reversed), original);
}

#[test]
fn the_schema_names_every_client_message_type() {
    let schema: Value = serde_json::from_str(&render()).unwrap();
    let text = schema["$defs"]["ClientMessage"].to_string();
    for tag in CLIENT_MESSAGE_TYPES {
        assert!(text.contains(&format!("\"{tag}\"")), "the schema lacks `{tag}`");
    }
    assert_eq!(schema["protocolVersion"], PROTOCOL_VERSION);
}
