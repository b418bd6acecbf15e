//! `docs/protocol-examples.md` is a contract: every JSON example in it parses as its type and
//! validates against `docs/protocol.v1.schema.json`, every request example is played against a
//! live host, every client example has malformed twins that get their documented error, and the examples
//! cover every message type, intent, finish action, decision and event kind of the schema.
//! Also the mismatches of issue 16: reads never remembered, HTTP one-shot callers without a
//! client id share nothing, HTTP status codes, refused handshakes' close codes.

use std::collections::BTreeSet;
use std::path::PathBuf;

use nucleic_protocol::{ClientMessage, Event, HostMessage, PROTOCOL_VERSION};
use serde_json::{Value, json};

use crate::support::*;

/// One fenced example: its role (`client`, `host`, `event`), its line and its JSON.
struct Example {
    role: String,
    line: usize,
    value: Value,
}

fn repo_file(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every ```` ```json client|host|event ```` block of `docs/protocol-examples.md`.
fn examples() -> Vec<Example> {
    let doc = repo_file("docs/protocol-examples.md");
    let mut out = Vec::new();
    let mut open: Option<(String, usize, String)> = None;
    for (i, line) in doc.lines().enumerate() {
        match &mut open {
            None => {
                if let Some(role) = line.trim().strip_prefix("```json ") {
                    open = Some((role.trim().to_owned(), i + 1, String::new()));
                }
            }
            Some((role, start, text)) => {
                if line.trim() == "```" {
                    let value = serde_json::from_str(text).unwrap_or_else(|e| {
                        panic!("docs/protocol-examples.md:{start}: example is not JSON: {e}")
                    });
                    out.push(Example { role: role.clone(), line: *start, value });
                    open = None;
                } else {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    assert!(open.is_none(), "docs/protocol-examples.md: an example block is never closed");
    out
}

fn schema() -> Value {
    serde_json::from_str(&repo_file(&format!("docs/protocol.v{PROTOCOL_VERSION}.schema.json")))
        .unwrap()
}

/// The subset of JSON Schema 2020-12 that schemars emits: `$ref` (with siblings), `type`,
/// `const`, `enum`, `properties`, `required`, `items`, `oneOf`, `anyOf`, `allOf`, integer
/// bounds. Returns the first violation.
fn validate(root: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            Err(format!("{at}: not allowed"))
        } else {
            Ok(())
        };
    };
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/");
        validate(root, &root["$defs"][name], value, at)?;
    }
    if let Some(ty) = obj.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let fits = |t: &str| match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            _ => false,
        };
        if !types.iter().any(|t| fits(t)) {
            return Err(format!("{at}: {value} is not {types:?}"));
        }
    }
    if let Some(c) = obj.get("const")
        && c != value
    {
        return Err(format!("{at}: {value} is not {c}"));
    }
    if let Some(Value::Array(options)) = obj.get("enum")
        && !options.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {options:?}"));
    }
    if let Some(min) = obj.get("minimum").and_then(Value::as_f64)
        && value.as_f64().is_some_and(|v| v < min)
    {
        return Err(format!("{at}: {value} < {min}"));
    }
    if let Value::Object(fields) = value {
        if let Some(Value::Array(required)) = obj.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !fields.contains_key(name) {
                    return Err(format!("{at}: missing `{name}`"));
                }
            }
        }
        if let Some(Value::Object(properties)) = obj.get("properties") {
            for (name, field) in fields {
                if let Some(s) = properties.get(name) {
                    validate(root, s, field, &format!("{at}.{name}"))?;
                }
            }
        }
    }
    if let (Some(items), Value::Array(values)) = (obj.get("items"), value) {
        for (i, v) in values.iter().enumerate() {
            validate(root, items, v, &format!("{at}[{i}]"))?;
        }
    }
    if let Some(Value::Array(all)) = obj.get("allOf") {
        for s in all {
            validate(root, s, value, at)?;
        }
    }
    if let Some(Value::Array(any)) = obj.get("anyOf")
        && !any.iter().any(|s| validate(root, s, value, at).is_ok())
    {
        return Err(format!("{at}: {value} matches no anyOf branch"));
    }
    if let Some(Value::Array(one)) = obj.get("oneOf") {
        let errors: Vec<String> =
            one.iter().filter_map(|s| validate(root, s, value, at).err()).collect();
        if one.len() - errors.len() != 1 {
            return Err(format!(
                "{at}: {value} matches {} oneOf branches ({errors:?})",
                one.len() - errors.len()
            ));
        }
    }
    Ok(())
}

/// The tags a tagged enum of the schema accepts (`tag` is `type`, `kind` or `action`).
fn schema_tags(root: &Value, name: &str, tag: &str) -> BTreeSet<String> {
    root["$defs"][name]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["properties"][tag]["const"].as_str().map(str::to_owned))
        .collect()
}

/// The values of a string enum of the schema (`enum` lists and `const` branches).
fn string_enum(root: &Value, name: &str) -> BTreeSet<String> {
    let def = &root["$defs"][name];
    let mut out = BTreeSet::new();
    let mut collect = |v: &Value| {
        for value in v["enum"].as_array().into_iter().flatten().chain(v.get("const")) {
            out.insert(value.as_str().unwrap_or_default().to_owned());
        }
    };
    collect(def);
    def["oneOf"].as_array().into_iter().flatten().for_each(&mut collect);
    assert!(!out.is_empty(), "{name} is not a string enum in the schema");
    out
}

/// The schema branch of a client message: its `required` fields.
fn required_fields(root: &Value, message_type: &str) -> Vec<String> {
    root["$defs"]["ClientMessage"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["properties"]["type"]["const"] == message_type)
        .and_then(|v| v["required"].as_array())
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

#[test]
fn every_example_parses_as_its_type_and_validates_against_the_schema() {
    let root = schema();
    let examples = examples();
    assert!(examples.len() > 40, "only {} examples found", examples.len());
    let mut seen: [BTreeSet<String>; 6] = Default::default();
    let note_event = |e: &Value, seen: &mut [BTreeSet<String>; 6]| {
        seen[5].insert(e["kind"]["type"].as_str().unwrap_or_default().to_owned());
    };
    for Example { role, line, value } in &examples {
        let (name, parsed) = match role.as_str() {
            "client" => {
                ("ClientMessage", serde_json::from_value::<ClientMessage>(value.clone()).err())
            }
            "host" => ("HostMessage", serde_json::from_value::<HostMessage>(value.clone()).err()),
            "event" => ("Event", serde_json::from_value::<Event>(value.clone()).err()),
            other => panic!("docs/protocol-examples.md:{line}: unknown example role `{other}`"),
        };
        assert!(parsed.is_none(), "docs/protocol-examples.md:{line}: not a {name}: {parsed:?}");
        let schema_ref = json!({"$ref": format!("#/$defs/{name}")});
        if let Err(e) = validate(&root, &schema_ref, value, "$") {
            panic!("docs/protocol-examples.md:{line}: does not validate as {name}: {e}");
        }
        // Malformed twins of what the host sends: each top-level field removed that the
        // schema requires, or the tag unknown — a client must not accept them.
        if role != "client" {
            let def = if role == "host" {
                root["$defs"]["HostMessage"]["oneOf"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|v| v["properties"]["type"]["const"] == value["type"])
                    .cloned()
                    .unwrap()
            } else {
                root["$defs"]["Event"].clone()
            };
            for field in def["required"].as_array().into_iter().flatten().filter_map(Value::as_str)
            {
                let mut twin = value.clone();
                twin.as_object_mut().unwrap().remove(field);
                assert!(
                    validate(&root, &schema_ref, &twin, "$").is_err()
                        && (role == "event"
                            && serde_json::from_value::<Event>(twin.clone()).is_err()
                            || role == "host"
                                && serde_json::from_value::<HostMessage>(twin.clone()).is_err()),
                    "docs/protocol-examples.md:{line}: accepted without {field}"
                );
            }
        }
        let tag = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        match role.as_str() {
            "client" => {
                seen[0].insert(tag(value, "type"));
                if value["type"] == "intent" {
                    seen[2].insert(tag(&value["intent"], "kind"));
                    if value["intent"]["kind"] == "finish" {
                        seen[3].insert(tag(&value["intent"]["action"], "action"));
                    }
                }
                if value["type"] == "decide" {
                    seen[4].insert(tag(&value["decision"], "type"));
                }
            }
            "host" => {
                seen[1].insert(tag(value, "type"));
                if value["type"] == "event" {
                    note_event(&value["event"], &mut seen);
                }
                for e in value["events"].as_array().into_iter().flatten() {
                    note_event(e, &mut seen);
                }
            }
            _ => note_event(value, &mut seen),
        }
    }
    let values = |v: &Value, k: &str| v[k].as_str().map(str::to_owned);
    let errors: BTreeSet<String> = examples
        .iter()
        .filter(|e| e.value["type"] == "error")
        .filter_map(|e| values(&e.value, "code"))
        .collect();
    let missing: Vec<_> =
        string_enum(&root, "ProtocolErrorCode").difference(&errors).cloned().collect();
    assert!(
        missing.is_empty(),
        "docs/protocol-examples.md has no error example with code {missing:?}"
    );
    for (name, field) in [("Verbosity", "verbosity"), ("ExportFormat", "format")] {
        let used: BTreeSet<String> =
            examples.iter().filter_map(|e| values(&e.value, field)).collect();
        let missing: Vec<_> = string_enum(&root, name).difference(&used).cloned().collect();
        assert!(
            missing.is_empty(),
            "docs/protocol-examples.md has no example with {field} {missing:?}"
        );
    }
    for (i, (name, tag)) in [
        ("ClientMessage", "type"),
        ("HostMessage", "type"),
        ("Intent", "kind"),
        ("FinishAction", "action"),
        ("Decision", "type"),
        ("EventKind", "type"),
    ]
    .into_iter()
    .enumerate()
    {
        let missing: Vec<_> = schema_tags(&root, name, tag).difference(&seen[i]).cloned().collect();
        assert!(
            missing.is_empty(),
            "docs/protocol-examples.md has no example of {name} {missing:?}"
        );
    }
}

/// Sends `message` and returns the reply that carries its `messageID` (events skipped).
async fn ask(socket: &mut Socket, message: &Value) -> Value {
    send(socket, message.clone()).await;
    loop {
        let reply = recv(socket).await;
        if reply["type"] != "event" && reply["type"] != "events" {
            return reply;
        }
    }
}

#[tokio::test]
async fn the_request_examples_work_against_a_live_host_and_their_malformed_twins_are_refused() {
    let root = schema();
    let s = start().await;
    let mut socket = ws(&s).await;
    let examples = examples();
    let clients: Vec<&Example> = examples.iter().filter(|e| e.role == "client").collect();
    let (hellos, requests): (Vec<&Example>, Vec<&Example>) =
        clients.iter().partition(|e| e.value["type"] == "hello");
    send(&mut socket, hellos[0].value.clone()).await;
    assert_eq!(
        recv(&mut socket).await["type"],
        "welcome",
        "docs/protocol-examples.md:{}",
        hellos[0].line
    );
    // rotateToken closes every connection: play it last.
    let (last, requests): (Vec<&Example>, Vec<&Example>) =
        requests.into_iter().partition(|e| e.value["intent"]["kind"] == "rotateToken");
    for Example { line, value, .. } in &requests {
        let reply = ask(&mut socket, value).await;
        assert_eq!(
            reply["messageID"], value["messageID"],
            "docs/protocol-examples.md:{line}: {reply}"
        );
        assert!(
            !matches!(reply["type"].as_str(), Some("unsupported"))
                && !matches!(reply["code"].as_str(), Some("badMessage" | "tooLarge")),
            "docs/protocol-examples.md:{line}: the host refused the example's shape: {reply}"
        );
        assert!(serde_json::from_value::<HostMessage>(reply.clone()).is_ok(), "{reply}");
        let id = value["messageID"].as_str().unwrap();
        let message_type = value["type"].as_str().unwrap();
        // Twin 1: each required field missing → badMessage (naming the message when it can).
        for field in required_fields(&root, message_type).iter().filter(|f| *f != "type") {
            let mut twin = value.clone();
            twin.as_object_mut().unwrap().remove(field);
            let reply = ask(&mut socket, &twin).await;
            assert_eq!(
                reply["code"], "badMessage",
                "docs/protocol-examples.md:{line} without {field}: {reply}"
            );
            if field != "messageID" {
                assert_eq!(reply["messageID"], id, "docs/protocol-examples.md:{line}: {reply}");
            }
        }
        // Twin 2: each required field of the wrong JSON type → badMessage.
        for field in required_fields(&root, message_type).iter().filter(|f| *f != "type") {
            let mut twin = value.clone();
            twin[field.as_str()] =
                if twin[field.as_str()].is_string() { json!(42) } else { json!("x") };
            let reply = ask(&mut socket, &twin).await;
            assert_eq!(
                reply["code"], "badMessage",
                "docs/protocol-examples.md:{line} {field} mistyped: {reply}"
            );
        }
        // Twin 3: an unknown message tag → unsupported; an unknown inner tag → badMessage.
        let mut twin = value.clone();
        twin["type"] = json!(format!("{message_type}V2"));
        let reply = ask(&mut socket, &twin).await;
        assert_eq!(
            (reply["type"].as_str(), reply["messageType"].as_str()),
            (Some("unsupported"), twin["type"].as_str()),
            "docs/protocol-examples.md:{line}: {reply}"
        );
        for (outer, tag) in [("intent", "kind"), ("decision", "type")] {
            if value.get(outer).is_some() {
                let mut twin = value.clone();
                twin[outer][tag] = json!("teleport");
                let reply = ask(&mut socket, &twin).await;
                assert_eq!(
                    reply["code"], "badMessage",
                    "docs/protocol-examples.md:{line}: {reply}"
                );
            }
        }
        if value["intent"].get("action").is_some() {
            let mut twin = value.clone();
            twin["intent"]["action"]["action"] = json!("teleport");
            let reply = ask(&mut socket, &twin).await;
            assert_eq!(reply["code"], "badMessage", "docs/protocol-examples.md:{line}: {reply}");
        }
    }
    for Example { line, value, .. } in last {
        let reply = ask(&mut socket, value).await;
        assert_eq!(reply["type"], "ack", "docs/protocol-examples.md:{line}: {reply}");
        assert_eq!(close_code(&mut socket).await, Some(4401), "rotateToken closes with 4401");
    }
}

#[tokio::test]
async fn malformed_hellos_are_refused_with_their_documented_error_and_close_code() {
    let root = schema();
    let s = start().await;
    let hello = examples().into_iter().find(|e| e.value["type"] == "hello").unwrap().value;
    for field in required_fields(&root, "hello").iter().filter(|f| *f != "type") {
        for twin in [
            {
                let mut t = hello.clone();
                t.as_object_mut().unwrap().remove(field);
                t
            },
            {
                let mut t = hello.clone();
                t[field.as_str()] = json!([]);
                t
            },
        ] {
            let mut socket = ws(&s).await;
            send(&mut socket, twin.clone()).await;
            let reply = recv(&mut socket).await;
            assert_eq!(reply["code"], "badHandshake", "{twin}: {reply}");
            assert_eq!(close_code(&mut socket).await, Some(1002), "{twin}");
        }
    }
    // A request before hello, a version not spoken: badHandshake and 1002.
    for first in [
        json!({"type": "listProjects", "messageID": "m1"}),
        json!({"type": "hello", "clientID": "c", "clientName": "c", "protocolVersion": 99}),
    ] {
        let mut socket = ws(&s).await;
        send(&mut socket, first.clone()).await;
        assert_eq!(recv(&mut socket).await["code"], "badHandshake", "{first}");
        assert_eq!(close_code(&mut socket).await, Some(1002), "{first}");
    }
    // A second hello: badHandshake, and the connection stays.
    let mut socket = ws(&s).await;
    send(&mut socket, hello.clone()).await;
    assert_eq!(recv(&mut socket).await["type"], "welcome");
    send(&mut socket, hello.clone()).await;
    assert_eq!(recv(&mut socket).await["code"], "badHandshake");
    let list = json!({"type": "listProjects", "messageID": "after"});
    assert_eq!(ask(&mut socket, &list).await["type"], "projects");
    // No token and no device proof: unauthorized and 4401.
    let mut socket = browser_ws(&s).await;
    send(&mut socket, hello.clone()).await;
    assert_eq!(recv(&mut socket).await["code"], "unauthorized");
    assert_eq!(close_code(&mut socket).await, Some(4401));
}

#[tokio::test]
async fn reads_are_never_remembered_so_a_reused_id_reads_again() {
    let s = start().await;
    let mut socket = ws(&s).await;
    hello(&mut socket).await;
    let list = json!({"type": "listSessions", "messageID": "r1", "includeArchived": false});
    assert_eq!(ask(&mut socket, &list).await["sessions"], json!([]));
    let add = json!({"type": "intent", "messageID": "a1", "intent": {"kind": "addProject", "path": s.repo}});
    let project = ask(&mut socket, &add).await["result"]["projectID"].clone();
    let projects = json!({"type": "listProjects", "messageID": "r1"});
    let reply = ask(&mut socket, &projects).await;
    assert_eq!(reply["type"], "projects", "a read reusing a read's id is carried out: {reply}");
    assert_eq!(reply["projects"][0]["projectID"], project);
    let branches = json!({"type": "listBranches", "messageID": "r1", "projectID": project});
    assert_eq!(ask(&mut socket, &branches).await["type"], "branches");
    // A change reusing an id gets the remembered reply, not a second project.
    assert_eq!(ask(&mut socket, &add).await["result"]["projectID"], project);
}

#[tokio::test]
async fn one_shot_http_callers_without_a_client_id_share_no_replies_and_get_documented_codes() {
    let s = start().await;
    let auth = format!("Authorization: Bearer {}\r\n", s.token);
    let add = json!({"type": "intent", "messageID": "m1", "intent": {"kind": "addProject", "path": s.repo}});
    let first = s.post_json("/api/message", &add, &auth).await;
    assert_eq!(first.status, 200, "{}", first.text());
    // Another script's m1: its own request, not the first script's remembered reply.
    let rename = json!({"type": "intent", "messageID": "m1", "intent": {"kind": "stop", "sessionID": "nope"}});
    let second = s.post_json("/api/message", &rename, &auth).await;
    assert_eq!(
        (second.status, second.json()["type"].clone()),
        (422, json!("error")),
        "{}",
        second.text()
    );
    // The same script resending without an id does the work again: the project exists now.
    let again = s.post_json("/api/message", &add, &auth).await;
    assert_eq!(again.status, 422, "{}", again.text());
    // With a client id a resent change gets its remembered reply.
    let named = format!("{auth}X-Nucleic-Client-Id: script-a\r\n");
    let list =
        json!({"type": "intent", "messageID": "k1", "intent": {"kind": "gc", "apply": false}});
    let one = s.post_json("/api/message", &list, &named).await;
    let two = s.post_json("/api/message", &list, &named).await;
    assert_eq!((one.status, one.json()), (two.status, two.json()));
    // Status codes: unsupported and malformed are 400.
    let unknown =
        s.post_json("/api/message", &json!({"type": "teleport", "messageID": "u"}), &auth).await;
    assert_eq!((unknown.status, unknown.json()["type"].clone()), (400, json!("unsupported")));
    let malformed =
        s.post_json("/api/message", &json!({"type": "gitFacts", "messageID": "g"}), &auth).await;
    assert_eq!((malformed.status, malformed.json()["code"].clone()), (400, json!("badMessage")));
    let subscribe = json!({"type": "subscribe", "messageID": "s", "sessionID": "x", "fromSeq": 1});
    let needs_a_connection = s.post_json("/api/message", &subscribe, &auth).await;
    assert_eq!(
        (needs_a_connection.status, needs_a_connection.json()["code"].clone()),
        (422, json!("invalidRequest"))
    );
    let read = s
        .post_json("/api/message", &json!({"type": "listProjects", "messageID": "p"}), &auth)
        .await;
    assert_eq!((read.status, read.json()["type"].clone()), (200, json!("projects")));
}

#[test]
fn the_schema_check_refuses_what_the_schema_forbids() {
    let root = schema();
    let event = json!({"$ref": "#/$defs/Event"});
    let good = json!({"seq": 1, "at": "2026-12-01T17:56:41.776Z", "sessionID": "s", "backend": "simulated", "kind": {"type": "stderr", "text": "x"}});
    assert_eq!(validate(&root, &event, &good, "$"), Ok(()));
    for (field, bad) in [
        ("seq", json!("1")),
        ("backend", json!("gpt")),
        ("kind", json!({"type": "stderrX", "text": "x"})),
        ("kind", json!({"type": "stderr"})),
    ] {
        let mut twin = good.clone();
        twin[field] = bad;
        assert!(validate(&root, &event, &twin, "$").is_err(), "{twin}");
    }
    let client = json!({"$ref": "#/$defs/ClientMessage"});
    let twin = json!({"type": "decide", "messageID": "m", "sessionID": "s", "requestID": "r", "decision": {"type": "maybe"}});
    assert!(validate(&root, &client, &twin, "$").is_err());
}
