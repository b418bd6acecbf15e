//! Stdin side: a reader thread feeding a channel, and classification of each input line.

use serde_json::Value;
use std::io::BufRead;
use std::sync::mpsc::{self, Receiver};

/// What the reader thread delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Raw {
    /// One line, without its line terminator.
    Line(String),
    /// End of input (or a read error).
    Eof,
}

/// Starts the thread reading `input` line by line. It ends at EOF.
pub fn spawn_reader<R: BufRead + Send + 'static>(mut input: R) -> Receiver<Raw> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let line = line.trim_end_matches(['\n', '\r']).to_owned();
                    if tx.send(Raw::Line(line)).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(Raw::Eof);
    });
    rx
}

/// A user message from the host.
#[derive(Debug, Clone, PartialEq)]
pub struct UserMsg {
    /// The text blocks joined by newlines (or the string content).
    pub text: String,
    /// The `message` object as received (echoed by `--replay-user-messages`).
    pub message: Value,
}

/// One classified stdin line.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Starts (or queues) a turn.
    User(UserMsg),
    /// A control request from the host.
    ControlRequest {
        /// `request_id`, echoed in the response (null when absent).
        request_id: Value,
        /// The `request` object.
        request: Value,
    },
    /// The host's answer to one of our control requests: the inner `response` object
    /// (`subtype`, `request_id`, `response` or `error`).
    ControlResponse(Value),
    /// Empty lines, unknown types, `keep_alive` and the like.
    Ignored,
}

/// Classifies a line. `Err` carries the stderr text of a fatal input error (exit 1).
pub fn classify(line: &str) -> Result<Input, String> {
    if line.trim().is_empty() {
        return Ok(Input::Ignored);
    }
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Err(format!(
            "Error parsing streaming input line (type=unknown, {} chars): SyntaxError",
            line.chars().count()
        ));
    };
    match value.get("type").and_then(Value::as_str) {
        Some("user") => user_message(&value).map(Input::User),
        Some("control_request") => Ok(Input::ControlRequest {
            request_id: value.get("request_id").cloned().unwrap_or(Value::Null),
            request: value.get("request").cloned().unwrap_or(Value::Null),
        }),
        Some("control_response") => Ok(value
            .get("response")
            .filter(|r| r.is_object())
            .cloned()
            .map_or(Input::Ignored, Input::ControlResponse)),
        _ => Ok(Input::Ignored),
    }
}

fn user_message(value: &Value) -> Result<UserMsg, String> {
    let message = value.get("message").cloned().unwrap_or(Value::Null);
    let role = message.get("role");
    if role.and_then(Value::as_str) != Some("user") {
        let got = match role {
            None | Some(Value::Null) => "undefined".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        return Err(format!("Error: Expected message role 'user', got '{got}'"));
    }
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    Ok(UserMsg { text, message })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_lines_like_the_real_cli() {
        assert_eq!(classify(""), Ok(Input::Ignored));
        assert_eq!(classify(r#"{"type":"bogus_type"}"#), Ok(Input::Ignored));
        assert_eq!(
            classify("{this is not json"),
            Err("Error parsing streaming input line (type=unknown, 17 chars): SyntaxError".into())
        );
        assert_eq!(
            classify(r#"{"type":"user"}"#),
            Err("Error: Expected message role 'user', got 'undefined'".into())
        );
        assert!(classify(r#"{"type":"user","message":"hi"}"#).is_err());
        let Ok(Input::User(m)) = classify(
            r#"{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"parent_tool_use_id":null}"#,
        ) else {
            panic!("not a user message")
        };
        assert_eq!(m.text, "a\nb");
        let Ok(Input::User(m)) =
            classify(r#"{"type":"user","message":{"role":"user","content":"hey"}}"#)
        else {
            panic!("not a user message")
        };
        assert_eq!(m.text, "hey");
        assert_eq!(
            classify(
                r#"{"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}}"#
            ),
            Ok(Input::ControlRequest {
                request_id: json!("r1"),
                request: json!({"subtype": "interrupt"})
            })
        );
    }

    #[test]
    fn reader_delivers_lines_then_eof() {
        let rx = spawn_reader(std::io::Cursor::new(b"a\r\n\nb".to_vec()));
        let got: Vec<Raw> = rx.iter().collect();
        assert_eq!(
            got,
            vec![Raw::Line("a".into()), Raw::Line(String::new()), Raw::Line("b".into()), Raw::Eof]
        );
    }
}
