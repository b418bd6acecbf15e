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

#[test]
fn the_schema_names_every_client_message_type() {
    let schema: Value = serde_json::from_str(&render()).unwrap();
    let text = schema["$defs"]["ClientMessage"].to_string();
    for tag in CLIENT_MESSAGE_TYPES {
        assert!(text.contains(&format!("\"{tag}\"")), "the schema lacks `{tag}`");
    }
    assert_eq!(schema["protocolVersion"], PROTOCOL_VERSION);
}
