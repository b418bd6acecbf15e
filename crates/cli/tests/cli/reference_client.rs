//! `examples/reference_client.py` — a client written from `docs/protocol.md` and the JSON Schema
//! only, outside the Rust types — runs the whole loop against a real daemon and the simulated
//! agent: hello, addProject, newSession, stream, disconnect with an approval pending, find it by
//! a replay from seq 1, reconnect from the cursor, decide (again: `alreadyResolved`; an unknown
//! request: `notFound`), turn end, gitFacts, finish/merge — every message checked against the
//! JSON Schema.

use std::path::PathBuf;
use std::time::Duration;

use crate::daemon::{DaemonGuard, cli_env, git};

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_client_runs_the_whole_loop_from_the_document_alone() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let _guard = DaemonGuard(home.clone());
    let root = crate::daemon::empty_repo(dir.path());
    // Any daemon command starts the daemon: it writes daemon.json (the port) and the token.
    let (code, _, err) = cli_env(&home, &["project", "list"], &[]).await;
    assert_eq!(code, 0, "{err}");

    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/reference_client.py");
    let run = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(&root)
        .env("NUCLEIC_HOME", &home)
        .env("NUCLEIC_CLIENT_DEADLINE", "60")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), run)
        .await
        .expect("the reference client did not finish within 90 s")
        .expect("python3 must be installed to run the reference client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "reference client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("disconnected at seq"), "{stdout}");
    // The merge landed on the project's main branch.
    assert_eq!(git(&root, &["show", "main:notes.txt"]), "hi\n", "{stdout}");
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    let session = last["sessionID"].as_str().unwrap();
    let transcript = home.join("sessions").join(session).join("transcript.jsonl");
    let events = std::fs::read_to_string(transcript).unwrap();
    let seqs: Vec<u64> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"].as_u64().unwrap())
        .collect();
    assert!(seqs.contains(&last["lastSeq"].as_u64().unwrap()), "{stdout}");
}
