//! The request examples of `docs/protocol-examples.md`, played verbatim (only the example ids replaced by
//! real ones) against a real daemon and a session of the simulated agent: `newSession`,
//! `subscribe`, `decide`, every read, `rename`, `unsubscribe` and `finish`/merge each get the
//! reply the document shows.

use std::path::PathBuf;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use crate::daemon::{DaemonGuard, cli_env, git};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The ```` ```json client ```` examples of the document, by `messageID` (`hello` by "hello").
fn client_examples() -> Vec<(String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol-examples.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```json client" {
            let text: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            let text = text.join("\n");
            let value: Value = serde_json::from_str(&text).unwrap();
            let id = value["messageID"].as_str().unwrap_or("hello").to_owned();
            out.push((id, text));
        }
    }
    out
}

struct Player {
    socket: Socket,
    examples: Vec<(String, String)>,
    /// Example id → real id.
    ids: Vec<(String, String)>,
    events: Vec<Value>,
}

impl Player {
    /// The example with this `messageID` (the first `hello` for "hello"), ids replaced.
    fn example(&self, id: &str) -> Value {
        let (_, text) =
            self.examples.iter().find(|(i, _)| i == id).unwrap_or_else(|| {
                panic!("docs/protocol-examples.md has no client example `{id}`")
            });
        let mut text = text.clone();
        for (from, to) in &self.ids {
            text = text.replace(from, to);
        }
        serde_json::from_str(&text).unwrap()
    }

    async fn next(&mut self) -> Value {
        let frame = tokio::time::timeout(Duration::from_secs(20), self.socket.next())
            .await
            .expect("no message from the daemon within 20 s")
            .unwrap()
            .unwrap();
        match frame {
            Message::Text(t) => serde_json::from_str(&t).unwrap(),
            _ => Value::Null,
        }
    }

    /// Plays the example `id`; returns its reply, after checking it is `reply_type`. Events
    /// arriving meanwhile are kept.
    async fn play(&mut self, id: &str, reply_type: &str) -> Value {
        let message = self.example(id);
        self.socket.send(Message::Text(message.to_string().into())).await.unwrap();
        loop {
            let reply = self.next().await;
            match reply["type"].as_str() {
                Some("event") => self.events.push(reply["event"].clone()),
                Some("sessionChanged") | None => {}
                _ if id != "hello" && reply["messageID"] != id => {}
                _ => {
                    assert_eq!(reply["type"], reply_type, "example `{id}` ({message}): {reply}");
                    return reply;
                }
            }
        }
    }

    /// Reads events until one satisfies `done`.
    async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Value {
        if let Some(e) = self.events.iter().find(|e| done(e)) {
            return e.clone();
        }
        loop {
            let message = self.next().await;
            if message["type"] == "event" {
                self.events.push(message["event"].clone());
                if done(&message["event"]) {
                    return message["event"].clone();
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documents_request_examples_work_against_a_real_session() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = crate::daemon::empty_repo(dir.path());
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &[]).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();

    let socket = crate::daemon::token_socket(&home).await;
    let mut p = Player {
        socket,
        examples: client_examples(),
        ids: vec![("918e5c9a".into(), project.clone())],
        events: Vec::new(),
    };
    p.play("hello", "welcome").await;
    let started = p.play("i4", "ack").await;
    let session = started["result"]["sessionID"].as_str().unwrap().to_owned();
    p.ids.push(("cf9e2672".into(), session.clone()));
    p.play("m9", "ack").await;
    let asked = p.until(|e| e["kind"]["type"] == "approvalRequested").await;
    let request_id = asked["kind"]["requestID"].as_str().unwrap().to_owned();
    p.ids.push(("5645f74b".into(), request_id));
    p.play("m12", "ack").await;
    p.until(|e| e["kind"]["type"] == "turnCompleted").await;
    p.until(|e| e["kind"]["type"] == "statusChanged" && e["kind"]["status"] == "awaiting-input")
        .await;

    let projects = p.play("m1", "projects").await;
    assert_eq!(projects["projects"][0]["projectID"], project.as_str());
    let sessions = p.play("m2", "sessions").await;
    assert_eq!(sessions["sessions"][0]["sessionID"], session.as_str());
    let facts = p.play("m3", "gitFacts").await;
    assert_eq!(facts["facts"]["files"][0]["path"], "notes.txt", "{facts}");
    let export = p.play("m4", "ack").await;
    assert!(export["result"]["text"].as_str().unwrap().contains("approvalResolved"));
    p.play("m19", "ack").await;
    let files = p.play("m5", "files").await;
    assert!(files["entries"].to_string().contains("notes.txt"), "{files}");
    let file = p.play("m6", "fileContent").await;
    assert_eq!(file["file"]["content"], "hi\n");
    let branches = p.play("m7", "branches").await;
    assert_eq!(branches["defaultBranch"], "main");
    p.play("m8", "devices").await;
    p.play("i9", "ack").await;
    p.play("m10", "ack").await;
    p.play("f1", "ack").await;
    assert_eq!(git(&root, &["show", "main:notes.txt"]), "hi\n");
}
