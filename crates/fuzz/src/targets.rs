//! The fuzz targets: each parser that reads untrusted bytes, its seed corpus, and the invariants
//! every input must keep (besides not panicking).

use std::io::Write;
use std::path::PathBuf;

use nucleic_agents::claude::ClaudeDecoder;
use nucleic_agents::codex::{AppServerDecoder, ExecDecoder};
use nucleic_protocol::{Backend, ErrorCode, Event, EventKind, HostMessage, Timestamp};
use serde_json::Value;

use crate::mutate::{Rng, mutate, mutate_document};

const CLAUDE_SAMPLES: &str =
    include_str!("../../agents/tests/fixtures/claude-2.1.332.samples.jsonl");
const APP_SERVER_SAMPLES: &str =
    include_str!("../../agents/tests/fixtures/codex-app-server.samples.jsonl");
const EXEC_SAMPLES: &str = include_str!("../../agents/tests/fixtures/codex-exec.samples.jsonl");
const CLAUDE_TRANSCRIPT: &str =
    include_str!("../../transfer/tests/fixtures/claude-transcript.jsonl");
const SEED_EXPORT: &str = include_str!("../../transfer/tests/fixtures/seed-export-rendered.txt");
const CODEX_ROLLOUT: &str = include_str!("../corpus/codex-rollout.jsonl");
const CLIENT_FRAMES: &str = include_str!("../corpus/client-frames.jsonl");

/// Every target, in the order the campaign runs them.
pub const TARGETS: &[Target] = &[
    Target::ClaudeLines,
    Target::CodexAppServer,
    Target::CodexExec,
    Target::ClientFrames,
    Target::Transcript,
    Target::ImportClaude,
    Target::ImportCodex,
    Target::ImportNucleic,
];

/// One parser under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `agents::claude::ClaudeDecoder` over stream-json lines.
    ClaudeLines,
    /// `agents::codex::AppServerDecoder` over JSON-RPC lines.
    CodexAppServer,
    /// `agents::codex::ExecDecoder` over `codex exec --json` lines.
    CodexExec,
    /// `server::parse_client_frame` over WebSocket text frames.
    ClientFrames,
    /// `store::read_transcript` over transcript files (torn and corrupt lines).
    Transcript,
    /// `transfer::import::claude_transcript`.
    ImportClaude,
    /// `transfer::import::codex_rollout`.
    ImportCodex,
    /// `transfer::import::nucleic_export` (markdown and JSONL exports).
    ImportNucleic,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::ClaudeLines => "claude-lines",
            Target::CodexAppServer => "codex-app-server",
            Target::CodexExec => "codex-exec",
            Target::ClientFrames => "client-frames",
            Target::Transcript => "transcript",
            Target::ImportClaude => "import-claude",
            Target::ImportCodex => "import-codex",
            Target::ImportNucleic => "import-nucleic",
        }
    }

    pub fn from_name(name: &str) -> Option<Target> {
        TARGETS.iter().copied().find(|t| t.name() == name)
    }
}

/// One generated input: the lines fed to a decoder (a session with some lines mutated), or one
/// whole document.
#[derive(Debug, Clone)]
pub struct Input {
    pub parts: Vec<Vec<u8>>,
    /// How many of `parts` were mutated (what the campaign counts as inputs).
    pub mutated: usize,
}

/// A target with its seeds and scratch state.
#[derive(Debug)]
pub struct Harness {
    target: Target,
    /// Seed lines (decoders, frames) or seed documents (transcripts, imports).
    seeds: Vec<Vec<u8>>,
    /// Lines to splice from.
    pool: Vec<Vec<u8>>,
    scratch: Option<(tempfile::TempDir, PathBuf)>,
}

impl Harness {
    pub fn new(target: Target) -> std::io::Result<Harness> {
        let lines = |text: &str| -> Vec<Vec<u8>> {
            text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.as_bytes().to_vec()).collect()
        };
        let (seeds, pool) = match target {
            Target::ClaudeLines => (sample_lines(CLAUDE_SAMPLES), lines(CLAUDE_TRANSCRIPT)),
            Target::CodexAppServer => {
                (sample_lines(APP_SERVER_SAMPLES), sample_lines(EXEC_SAMPLES))
            }
            Target::CodexExec => (sample_lines(EXEC_SAMPLES), sample_lines(APP_SERVER_SAMPLES)),
            Target::ClientFrames => (lines(CLIENT_FRAMES), sample_lines(CLAUDE_SAMPLES)),
            Target::Transcript => {
                let doc = transcript_seed();
                (vec![doc.clone().into_bytes()], lines(&doc))
            }
            Target::ImportClaude => (vec![CLAUDE_TRANSCRIPT.into()], lines(CLAUDE_TRANSCRIPT)),
            Target::ImportCodex => (vec![CODEX_ROLLOUT.into()], lines(CODEX_ROLLOUT)),
            Target::ImportNucleic => {
                let jsonl = transcript_seed();
                (vec![SEED_EXPORT.into(), jsonl.into_bytes()], lines(SEED_EXPORT))
            }
        };
        let scratch = if target == Target::Transcript {
            // A file rewritten per input: in memory (tmpfs) when there is one, 30× faster here.
            let shm = std::path::Path::new("/dev/shm");
            let dir = if shm.is_dir() { tempfile::tempdir_in(shm)? } else { tempfile::tempdir()? };
            let path = dir.path().join("transcript.jsonl");
            Some((dir, path))
        } else {
            None
        };
        Ok(Harness { target, seeds, pool, scratch })
    }

    pub fn target(&self) -> Target {
        self.target
    }

    /// The unmutated seeds as inputs (each must pass too).
    pub fn seed_inputs(&self) -> Vec<Input> {
        match self.target {
            Target::ClaudeLines | Target::CodexAppServer | Target::CodexExec => {
                vec![Input { parts: self.seeds.clone(), mutated: 0 }]
            }
            _ => self.seeds.iter().map(|s| Input { parts: vec![s.clone()], mutated: 0 }).collect(),
        }
    }

    /// A new mutated input.
    pub fn generate(&self, rng: &mut Rng) -> Input {
        let mut others = self.seeds.clone();
        others.extend(self.pool.iter().cloned());
        match self.target {
            Target::ClaudeLines | Target::CodexAppServer | Target::CodexExec => {
                // A session in sample order, each line mutated with probability 1/2, so the
                // decoder's state (open turns, tool ids, usage) is exercised too.
                let mut mutated = 0;
                let parts = self
                    .seeds
                    .iter()
                    .map(|line| {
                        if rng.one_in(2) {
                            mutated += 1;
                            mutate(rng, line, &others)
                        } else {
                            line.clone()
                        }
                    })
                    .collect();
                Input { parts, mutated }
            }
            Target::ClientFrames => {
                let seed = rng.pick(&self.seeds).cloned().unwrap_or_default();
                Input { parts: vec![mutate(rng, &seed, &others)], mutated: 1 }
            }
            _ => {
                let seed = rng.pick(&self.seeds).cloned().unwrap_or_default();
                Input { parts: vec![mutate_document(rng, &seed, &others)], mutated: 1 }
            }
        }
    }

    /// Runs the parser on `input` and checks its invariants.
    pub fn check(&self, input: &Input) -> Result<(), String> {
        match self.target {
            Target::ClaudeLines => {
                let mut d = ClaudeDecoder::new();
                for part in &input.parts {
                    let line = String::from_utf8_lossy(part);
                    let out = d.decode(&line);
                    check_line(&line, &out.native_type, &out.events, Backend::ClaudeCode)?;
                }
                Ok(())
            }
            Target::CodexAppServer => {
                let mut d = AppServerDecoder::new();
                for part in &input.parts {
                    let line = String::from_utf8_lossy(part);
                    let out = d.decode(&line);
                    check_line(&line, &out.native_type, &out.events, Backend::Codex)?;
                }
                Ok(())
            }
            Target::CodexExec => {
                let mut d = ExecDecoder::new().with_session_info("/w", "gpt-5.5");
                for part in &input.parts {
                    let line = String::from_utf8_lossy(part);
                    let out = d.decode(&line);
                    check_line(&line, &out.native_type, &out.events, Backend::Codex)?;
                }
                Ok(())
            }
            Target::ClientFrames => input.parts.iter().try_for_each(|p| check_frame(p)),
            Target::Transcript => {
                let Some((_, path)) = &self.scratch else {
                    return Err("transcript harness has no scratch file".into());
                };
                input.parts.iter().try_for_each(|p| check_transcript(path, p))
            }
            Target::ImportClaude | Target::ImportCodex | Target::ImportNucleic => {
                input.parts.iter().try_for_each(|p| self.check_import(p))
            }
        }
    }

    fn check_import(&self, bytes: &[u8]) -> Result<(), String> {
        // Files are read with `read_to_string`: invalid UTF-8 is refused before parsing, so
        // the parsers see the lossy text of such input.
        let text = String::from_utf8_lossy(bytes);
        let imported = match self.target {
            Target::ImportClaude => nucleic_transfer::import::claude_transcript(&text, "fuzz"),
            Target::ImportCodex => nucleic_transfer::import::codex_rollout(&text, "fuzz"),
            _ => nucleic_transfer::import::nucleic_export(&text),
        };
        let session = match imported {
            Ok(s) => s,
            Err(e) if e.to_string().is_empty() => return Err("an import error without text".into()),
            Err(_) => return Ok(()),
        };
        for (i, event) in session.events.iter().enumerate() {
            if event.seq != i as u64 + 1 {
                return Err(format!("event {i} has seq {} (want {})", event.seq, i + 1));
            }
            round_trip(event)?;
        }
        if self.target != Target::ImportNucleic {
            let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let non_blank = body.lines().filter(|l| !l.trim().is_empty()).count();
            let accounted = session.source_lines + usize::from(session.torn_tail);
            if accounted != non_blank {
                return Err(format!(
                    "{non_blank} non-blank lines but {} imported + {} torn",
                    session.source_lines, session.torn_tail
                ));
            }
        }
        Ok(())
    }
}

/// The `line` field of each `{"sample", "line"}` fixture row.
fn sample_lines(text: &str) -> Vec<Vec<u8>> {
    text.lines()
        .filter_map(|row| serde_json::from_str::<Value>(row).ok())
        .filter_map(|v| v.get("line").and_then(Value::as_str).map(|l| l.as_bytes().to_vec()))
        .collect()
}

/// A transcript as the store writes it: the seed export's events, one JSON line each.
fn transcript_seed() -> String {
    match nucleic_transfer::import::nucleic_export(SEED_EXPORT) {
        Ok(s) => nucleic_transfer::export::jsonl(&s.events),
        Err(_) => String::new(),
    }
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// A decoded line: at least one event; a line that is not JSON kept as `raw` with a `decode`
/// error; every event survives a transcript round trip (else a reader would skip it).
fn check_line(
    line: &str,
    native_type: &str,
    events: &[EventKind],
    backend: Backend,
) -> Result<(), String> {
    if events.is_empty() {
        return Err(format!("no event for a line ({native_type})"));
    }
    if !is_json(line) {
        let kept = events.iter().any(|e| match e {
            EventKind::Raw(r) => {
                r.native.as_str() == line
                    || serde_json::from_str::<String>(r.native.as_str()).is_ok_and(|s| s == line)
            }
            _ => false,
        });
        if !kept {
            return Err("a line that is not JSON was not kept verbatim as raw".into());
        }
        let reported =
            events.iter().any(|e| matches!(e, EventKind::Error(x) if x.code == ErrorCode::Decode));
        if !reported {
            return Err("a line that is not JSON got no decode error".into());
        }
    }
    for kind in events {
        let event = Event {
            seq: 1,
            at: Timestamp::from_unix_millis(0),
            session_id: "fuzz".into(),
            backend,
            native_type: Some(native_type.to_owned()),
            origin: None,
            kind: kind.clone(),
        };
        round_trip(&event)?;
    }
    Ok(())
}

/// An event written to a transcript must read back.
fn round_trip(event: &Event) -> Result<(), String> {
    let text = serde_json::to_string(event).map_err(|e| format!("event does not encode: {e}"))?;
    serde_json::from_str::<Event>(&text)
        .map(|_| ())
        .map_err(|e| format!("event does not read back ({e}): {}", truncate(&text)))
}

fn truncate(text: &str) -> String {
    text.chars().take(300).collect()
}

/// A client frame: parsed, or answered with a reply naming its message id; a parsed message
/// encodes and parses back to itself.
fn check_frame(bytes: &[u8]) -> Result<(), String> {
    // WebSocket text frames are valid UTF-8 (tungstenite checks); invalid bytes become lossy text.
    let text = String::from_utf8_lossy(bytes);
    match nucleic_server::parse_client_frame(&text) {
        Ok(message) => {
            let encoded = serde_json::to_string(&message)
                .map_err(|e| format!("message does not encode: {e}"))?;
            match nucleic_server::parse_client_frame(&encoded) {
                Ok(again) if again == message => Ok(()),
                // serde_json's default float parsing may be one ULP off (its `float_roundtrip`
                // feature is not enabled): numbers are compared with that tolerance.
                Ok(again) if same_json(&to_value(&again), &to_value(&message)) => Ok(()),
                Ok(again) => Err(format!("re-parsed differently: {again:?} vs {message:?}")),
                Err(reply) => Err(format!("own encoding refused: {reply:?}")),
            }
        }
        Err(reply) => {
            serde_json::to_string(&reply).map_err(|e| format!("reply does not encode: {e}"))?;
            let sent_id = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("messageID").and_then(Value::as_str).map(str::to_owned));
            let replied_id = match *reply {
                HostMessage::Error { ref message_id, .. } => message_id.clone(),
                HostMessage::Unsupported { ref message_id, .. } => message_id.clone(),
                ref other => return Err(format!("refusal is not an error reply: {other:?}")),
            };
            if text.len() <= nucleic_protocol::MAX_CLIENT_MESSAGE_BYTES && sent_id != replied_id {
                return Err(format!("reply names {replied_id:?}, the frame {sent_id:?}"));
            }
            Ok(())
        }
    }
}

fn to_value(message: &nucleic_protocol::ClientMessage) -> Value {
    serde_json::to_value(message).unwrap_or(Value::Null)
}

/// Equal JSON, floats within a relative 1e-12.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => {
                (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
            }
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// A transcript file: never an error, every complete line decoded or reported, a torn tail
/// exactly when the file does not end in a newline.
fn check_transcript(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    let mut file = std::fs::File::create(path).map_err(|e| format!("scratch file: {e}"))?;
    file.write_all(bytes).map_err(|e| format!("scratch file: {e}"))?;
    drop(file);
    let out = nucleic_store::read_transcript(path, 0).map_err(|e| format!("read failed: {e}"))?;
    let complete = bytes.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    if out.complete_len != complete as u64 {
        return Err(format!(
            "complete_len {} but {complete} bytes end in a newline",
            out.complete_len
        ));
    }
    if out.torn_tail != (complete < bytes.len()) {
        return Err(format!(
            "torn_tail {} for {} trailing bytes",
            out.torn_tail,
            bytes.len() - complete
        ));
    }
    let lines: Vec<&[u8]> = bytes[..complete].split(|&c| c == b'\n').collect();
    let non_blank = lines
        .iter()
        .take(lines.len().saturating_sub(1))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count();
    if out.events.len() + out.skipped.len() != non_blank {
        return Err(format!(
            "{non_blank} complete lines but {} events + {} skipped",
            out.events.len(),
            out.skipped.len()
        ));
    }
    let max_seq = out.events.iter().map(|e| e.seq).max().unwrap_or(0);
    if out.last_seq != max_seq {
        return Err(format!("last_seq {} but highest seq read {max_seq}", out.last_seq));
    }
    for event in &out.events {
        round_trip(event)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use nucleic_protocol::{ErrorEvent, RawJson};

    use super::*;

    fn decode_error() -> EventKind {
        EventKind::Error(ErrorEvent {
            code: ErrorCode::Decode,
            message: "not JSON".into(),
            http_status: None,
        })
    }

    #[test]
    fn a_dropped_or_unreported_line_is_a_violation() {
        let line = "{not json";
        let raw = EventKind::raw(RawJson::from_any_text(line));
        assert!(check_line(line, "invalid", &[], Backend::ClaudeCode).is_err());
        assert!(
            check_line(line, "invalid", std::slice::from_ref(&raw), Backend::ClaudeCode).is_err()
        );
        let other = EventKind::raw(RawJson::from_any_text("{other"));
        assert!(
            check_line(line, "invalid", &[other, decode_error()], Backend::ClaudeCode).is_err()
        );
        assert_eq!(
            check_line(line, "invalid", &[raw, decode_error()], Backend::ClaudeCode),
            Ok(())
        );
    }

    #[test]
    fn a_transcript_line_neither_read_nor_reported_is_a_violation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.jsonl");
        // `{}` is not an event: reported as skipped, so every line is accounted for.
        assert_eq!(check_transcript(&path, b"{}\n\n{\"torn"), Ok(()));
    }

    #[test]
    fn a_refusal_that_loses_the_message_id_is_a_violation() {
        assert_eq!(check_frame(br#"{"type":"nosuch","messageID":"m"}"#), Ok(()));
        assert_eq!(check_frame(br#"{"type":"decide","messageID":"m"}"#), Ok(()));
        assert_eq!(check_frame(b"[1"), Ok(()));
    }

    #[test]
    fn the_client_frame_seeds_are_valid_messages_but_the_last() {
        let frames: Vec<&str> = CLIENT_FRAMES.lines().collect();
        let refused: Vec<String> = frames
            .iter()
            .filter_map(|f| {
                nucleic_server::parse_client_frame(f).err().map(|e| format!("{f}: {e:?}"))
            })
            .collect();
        assert_eq!(refused.len(), 1, "{refused:#?}");
    }
}
