//! Helpers: run the binary, parse its JSONL, check event order and seq.

use std::path::{Path, PathBuf};
use std::process::Output;

use nucleic_protocol::Event;

pub fn nucleic() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nucleic"))
}

/// The output of one `nucleic` invocation.
#[derive(Debug)]
pub struct RunResult {
    pub code: Option<i32>,
    pub events: Vec<Event>,
    pub stderr: String,
}

/// Runs `nucleic <args>` in `cwd` with `env` added, NUCLEIC_HOME under `cwd/.nh`, stdin closed.
pub async fn run_nucleic(cwd: &Path, args: &[&str], env: &[(String, String)]) -> RunResult {
    let out: Output = tokio::process::Command::new(nucleic())
        .args(args)
        .current_dir(cwd)
        .env("NUCLEIC_HOME", cwd.join(".nh"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events = if args.contains(&"--json") {
        stdout
            .lines()
            .map(|l| {
                serde_json::from_str::<Event>(l)
                    .unwrap_or_else(|e| panic!("stdout line is not an event ({e}): {l}"))
            })
            .collect()
    } else {
        Vec::new()
    };
    RunResult {
        code: out.status.code(),
        events,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `nucleic run --agent sim --json <args>` in `cwd`.
pub async fn sim(cwd: &Path, args: &[&str], env: &[(String, String)]) -> RunResult {
    let mut all = vec!["run", "--agent", "sim", "--json"];
    all.extend_from_slice(args);
    run_nucleic(cwd, &all, env).await
}

/// The kinds' wire names, in order.
pub fn kinds(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.type_name()).collect()
}

/// Panics unless `expected` appears in `events` in this order (other events may sit between).
pub fn assert_in_order(events: &[Event], expected: &[&str]) {
    let got = kinds(events);
    let mut it = got.iter();
    for want in expected {
        assert!(it.any(|k| k == want), "missing {want} (in order {expected:?}) in {got:?}");
    }
}

/// Panics unless seq runs 1, 2, 3, … with no gap and one session id.
pub fn assert_gapless(events: &[Event]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1, "seq gap at index {i}");
        assert_eq!(e.session_id, events[0].session_id);
    }
}

/// `Some(payload)` when `kind` is `EventKind::$variant(payload)`.
macro_rules! pick {
    ($kind:expr, $variant:ident) => {
        match $kind {
            nucleic_protocol::EventKind::$variant(x) => Some(x.clone()),
            _ => None,
        }
    };
}
pub(crate) use pick;

/// The payload of the first `$variant` event in `$events` (panics when there is none).
macro_rules! first {
    ($events:expr, $variant:ident) => {
        $events
            .iter()
            .find_map(|e| crate::support::pick!(&e.kind, $variant))
            .unwrap_or_else(|| panic!("no {} event", stringify!($variant)))
    };
}
pub(crate) use first;

/// Reads the session transcript written under `cwd/.nh`.
pub fn transcript_of(cwd: &Path, events: &[Event]) -> Vec<Event> {
    let id = &events[0].session_id;
    let path = cwd.join(".nh/sessions").join(id).join("transcript.jsonl");
    nucleic_store::read_transcript(&path, 1).unwrap().events
}

/// Makes the host of `home` put every command and edit to a person (a Nucleic host rule file),
/// as tests of approvals expect: without it the policy allows edits and read-only commands in
/// the worktree on its own.
pub fn ask_for_everything(home: &std::path::Path) {
    std::fs::create_dir_all(home).unwrap();
    std::fs::write(
        home.join("rules.json"),
        r#"{"permissions":{"ask":["Bash","Edit","Write","MultiEdit","NotebookEdit"]}}"#,
    )
    .unwrap();
}
