//! `nucleic mcp` end to end over stdio against a real daemon, as MCP grants made with `nucleic
//! mcp grant`: the handshake, `tools/list`, a simulated session started, waited on, its pending
//! approval read and answered — refused without `approve` (the command never runs), landing
//! with it, recorded as the grant —, a transcript window, the diff, revocation closing the
//! grant's connection; bad input (malformed lines, unknown methods and tools, a 10 MB line)
//! answered or dropped while the server keeps serving, and 100 concurrent calls.

use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::chat_bridge::{cli, setup};
use crate::support::nucleic;

const WITHIN: Duration = Duration::from_secs(30);

/// `nucleic mcp grant NAME --scope SCOPES`: the credential it printed.
pub(crate) async fn grant(home: &Path, name: &str, scopes: &str) -> String {
    let (code, out, err) = cli(home, &["mcp", "grant", name, "--scope", scopes]).await;
    assert_eq!(code, 0, "{out}{err}");
    out.lines()
        .find(|l| l.starts_with("nucleic-mcp-"))
        .unwrap_or_else(|| panic!("no credential printed: {out}"))
        .to_owned()
}

/// One `nucleic mcp` process and its stdio.
pub(crate) struct Mcp {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// Ids of every reply read so far.
    seen: HashSet<i64>,
    /// Replies read while waiting for another (they may come in any order).
    early: std::collections::HashMap<i64, Value>,
    next_id: i64,
}

impl Mcp {
    /// Starts `nucleic mcp` with `credential` and completes the handshake.
    pub(crate) async fn start(home: &Path, credential: &str) -> Mcp {
        let mut child = tokio::process::Command::new(nucleic())
            .arg("mcp")
            .env("NUCLEIC_HOME", home)
            .env("NUCLEIC_MCP_CREDENTIAL", credential)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut mcp = Mcp {
            child,
            stdin,
            lines,
            seen: HashSet::new(),
            early: Default::default(),
            next_id: 1000,
        };
        mcp.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}))
            .await;
        let init = mcp.reply_to(1).await;
        assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        mcp
    }

    async fn send_line(&mut self, line: &str) {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next reply to `id`, within 30 s.
    async fn reply_to(&mut self, id: i64) -> Value {
        if let Some(reply) = self.early.remove(&id) {
            return reply;
        }
        loop {
            let line = tokio::time::timeout(WITHIN, self.lines.next_line()).await;
            let mut seen: Vec<i64> = self.seen.iter().copied().collect();
            seen.sort_unstable();
            let line = line
                .unwrap_or_else(|_| {
                    panic!("no reply to request {id} within {WITHIN:?}; replies seen: {seen:?}")
                })
                .unwrap()
                .unwrap_or_else(|| panic!("nucleic mcp closed stdout before replying to {id}"));
            let message: Value = serde_json::from_str(&line).unwrap();
            let Some(got) = message["id"].as_i64() else { continue };
            self.seen.insert(got);
            if got == id {
                return message;
            }
            self.early.insert(got, message);
        }
    }

    /// Calls `tool`; its whole JSON-RPC reply.
    async fn call_raw(&mut self, tool: &str, arguments: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}))
            .await;
        self.reply_to(id).await
    }

    /// Calls `tool` and reads its text result as JSON (panics on an error result).
    pub(crate) async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.call_raw(tool, arguments).await;
        assert_ne!(reply["result"]["isError"], json!(true), "{tool}: {reply}");
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: {reply}"));
        serde_json::from_str(text).unwrap()
    }

    /// Calls `tool` expecting the host's refusal; its text.
    async fn refused(&mut self, tool: &str, arguments: Value) -> String {
        let reply = self.call_raw(tool, arguments).await;
        assert_eq!(reply["result"]["isError"], json!(true), "{tool} not refused: {reply}");
        reply["result"]["content"][0]["text"].as_str().unwrap().to_owned()
    }

    /// Closes stdin; the process must exit cleanly.
    pub(crate) async fn finish(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("nucleic mcp exits within 20 s of its stdin closing")
            .unwrap();
        assert!(status.success(), "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_stdio_lists_tools_and_projects_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;

    // Without a grant `nucleic mcp` does not serve, saying what to do; a made-up credential
    // is refused by the host.
    let out = tokio::process::Command::new(nucleic())
        .arg("mcp")
        .env("NUCLEIC_HOME", &home)
        .env_remove("NUCLEIC_MCP_CREDENTIAL")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("nucleic mcp grant"), "{err}");
    let out = tokio::process::Command::new(nucleic())
        .arg("mcp")
        .env("NUCLEIC_HOME", &home)
        .env("NUCLEIC_MCP_CREDENTIAL", "nucleic-mcp-madeup")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("unknown MCP credential"), "{err}");

    let credential = grant(&home, "watcher", "observe").await;
    let mut mcp = Mcp::start(&home, &credential).await;
    mcp.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let list = mcp.reply_to(2).await;
    let mut names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "answer_approval",
            "finish_session",
            "list_projects",
            "list_sessions",
            "pending_approvals",
            "read_transcript",
            "send_message",
            "session_diff",
            "start_session",
            "wait_for_session"
        ],
        "{list}"
    );

    let projects = mcp.call("list_projects", json!({})).await;
    let roots: Vec<&str> =
        projects.as_array().unwrap().iter().filter_map(|p| p["root"].as_str()).collect();
    assert_eq!(roots.len(), 1, "{projects}");
    assert!(roots[0].ends_with("repo"), "{projects}");
    assert_eq!(mcp.call("list_sessions", json!({})).await, json!([]), "a new home has none");
    // Observe only: starting is refused by the host, saying why.
    let project = projects[0]["projectID"].as_str().unwrap().to_owned();
    let why =
        mcp.refused("start_session", json!({"project_id": project, "prompt": "say hi"})).await;
    assert!(why.contains("`start` scope") && why.contains("watcher"), "{why}");
    assert_eq!(mcp.call("list_sessions", json!({})).await, json!([]), "nothing was started");

    // Bad input: the server answers with JSON-RPC errors and keeps serving.
    mcp.send_line("{this is not json").await;
    mcp.send(&json!("a JSON string, not a JSON-RPC message")).await;
    mcp.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"})).await;
    let unknown = mcp.reply_to(5).await;
    assert_eq!(unknown["error"]["code"], json!(-32601), "method not found: {unknown}");
    let no_tool = mcp.call_raw("approve_everything", json!({})).await;
    assert!(
        no_tool["error"].is_object() || no_tool["result"]["isError"] == json!(true),
        "{no_tool}"
    );
    let bad_args = mcp.call_raw("read_transcript", json!({"from_seq": "x"})).await;
    // Arguments of the wrong type: refused, saying so (rmcp makes it the tool's error result).
    assert!(bad_args.to_string().contains("expected u64"), "{bad_args}");
    mcp.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})).await;
    let again = mcp.reply_to(7).await;
    assert!(again["result"]["tools"].is_array(), "still serving after bad input: {again}");
    mcp.finish().await;
}

/// VmHWM (peak resident set) of `pid`, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10_mb_line_is_dropped_unread_and_100_concurrent_calls_are_all_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let credential = grant(&home, "load", "observe").await;
    let mut mcp = Mcp::start(&home, &credential).await;
    let pid = mcp.child.id().unwrap();
    let before = peak_kib(pid);

    // A 10 MB request: longer than the 1 MiB bound, dropped unread (no reply: its id is in
    // what is not read), and the process does not grow by it.
    let huge = json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {
        "name": "list_sessions", "arguments": {"project_id": "x".repeat(10 * 1024 * 1024)}}});
    mcp.send(&huge).await;
    mcp.send(&json!({"jsonrpc": "2.0", "id": 51, "method": "tools/list"})).await;
    assert!(mcp.reply_to(51).await["result"]["tools"].is_array());
    let after = peak_kib(pid);
    eprintln!("peak RSS of nucleic mcp: {before} KiB before the 10 MB line, {after} KiB after");
    assert!(after < before + 4 * 1024, "grew from {before} to {after} KiB on a dropped line");

    // 100 calls at once, in one write: every one answered, once.
    let mut batch = String::new();
    for id in 100..200 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "list_projects", "arguments": {}}});
        batch.push_str(&call.to_string());
        batch.push('\n');
    }
    let started = std::time::Instant::now();
    mcp.stdin.write_all(batch.as_bytes()).await.unwrap();
    mcp.stdin.flush().await.unwrap();
    for id in 100..200 {
        let reply = mcp.reply_to(id).await;
        assert!(reply["result"]["content"][0]["text"].is_string(), "{reply}");
    }
    eprintln!("100 concurrent list_projects answered in {:?}", started.elapsed());
    assert!(!mcp.seen.contains(&50), "the dropped 10 MB request was answered");
    mcp.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_mcp_a_session_is_started_waited_on_and_its_approval_held_to_the_grant() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let helper_credential = grant(&home, "helper", "start,steer").await;
    let approver_credential = grant(&home, "approver", "approve").await;
    let mut helper = Mcp::start(&home, &helper_credential).await;

    let projects = helper.call("list_projects", json!({})).await;
    let project = projects[0]["projectID"].as_str().unwrap().to_owned();
    let session = helper
        .call(
            "start_session",
            json!({"project_id": project, "prompt": "run touch mcp-ran",
            "backend": "simulated"}),
        )
        .await;
    let id = session["sessionID"].as_str().unwrap().to_owned();
    let worktree = Path::new(session["worktree"]["path"].as_str().unwrap()).to_path_buf();
    let waited =
        helper.call("wait_for_session", json!({"session_id": id, "timeout_secs": 30})).await;
    assert_eq!(waited["reason"], "needs-approval", "{waited}");
    let pending = helper.call("pending_approvals", json!({"session_id": id})).await;
    let request = pending[0]["requestID"].as_str().unwrap().to_owned();
    assert_eq!(pending[0]["toolName"], "Bash", "{pending}");

    // Attack: without `approve` the allow is refused, why is said, and nothing runs.
    let why = helper
        .refused(
            "answer_approval",
            json!({"session_id": id, "request_id": request,
            "decision": "allow"}),
        )
        .await;
    assert!(why.contains("`approve` scope") && why.contains("helper"), "{why}");
    let sessions = helper.call("list_sessions", json!({})).await;
    assert_eq!(sessions[0]["pendingApprovals"], 1, "{sessions}");
    assert!(!worktree.join("mcp-ran").exists(), "the command ran");

    // Feature: the grant with `approve` allows it; it runs, recorded as that grant.
    let mut approver = Mcp::start(&home, &approver_credential).await;
    let resolved = approver
        .call(
            "answer_approval",
            json!({"session_id": id, "request_id": request,
            "decision": "allow"}),
        )
        .await;
    assert_eq!(resolved["by"], "mcp:approver", "{resolved}");
    // The listed summary may lag the answer a moment: wait again until the turn is over.
    let mut waited = json!(null);
    for _ in 0..50 {
        waited =
            helper.call("wait_for_session", json!({"session_id": id, "timeout_secs": 30})).await;
        if waited["reason"] != "needs-approval" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(waited["reason"], "turn-over", "{waited}");
    assert!(worktree.join("mcp-ran").exists(), "the allowed command did not run");

    // A bounded window of the transcript, continued from nextSeq, with no gap.
    let first = helper.call("read_transcript", json!({"session_id": id, "limit": 3})).await;
    let seqs: Vec<u64> =
        first["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3], "{first}");
    assert_eq!(first["nextSeq"], 4);
    let rest = helper
        .call("read_transcript", json!({"session_id": id, "from_seq": 4, "limit": 500}))
        .await;
    let events = rest["events"].as_array().unwrap();
    assert_eq!(events[0]["seq"], 4, "{rest}");
    assert_eq!(rest["more"], false, "{rest}");
    let resolved_event = events
        .iter()
        .find(|e| e["kind"]["type"] == "approvalResolved" || e["type"] == "approvalResolved");
    let text = rest.to_string();
    assert!(resolved_event.is_some() || text.contains("mcp:approver"), "{rest}");
    assert!(text.contains("mcp:approver"), "the resolution names the grant: {rest}");
    // And the diff shows the file the command made.
    let diff = helper.call("session_diff", json!({"session_id": id, "include_patch": true})).await;
    assert!(diff.to_string().contains("mcp-ran"), "{diff}");
    // Finishing needs `finish`: the helper is refused, a finisher squashes it into main.
    let squash = json!({"session_id": id, "how": "squash", "message": "via mcp"});
    let why = helper.refused("finish_session", squash.clone()).await;
    assert!(why.contains("`finish` scope"), "{why}");
    let finisher_credential = grant(&home, "finisher", "finish").await;
    let mut finisher = Mcp::start(&home, &finisher_credential).await;
    // main is checked out in the person's checkout: refused unless asked to update it.
    let why = finisher.refused("finish_session", squash.clone()).await;
    assert!(why.contains("checked out"), "{why}");
    let mut squash = squash;
    squash["update_checkout"] = json!(true);
    let done = finisher.call("finish_session", squash).await;
    assert!(done.to_string().contains("main"), "{done}");
    let repo = dir.path().join("repo");
    let shown = std::process::Command::new("git")
        .args(["log", "-1", "--format=%s", "main"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&shown.stdout).trim(), "via mcp", "{done}");
    finisher.finish().await;

    // Revoked by the person, the grant's open connection is closed and its calls fail.
    let (code, out, err) = cli(&home, &["mcp", "revoke", "helper"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("helper") && out.contains("REVOKED"), "{out}");
    let after = helper.call_raw("list_sessions", json!({})).await;
    assert!(after["error"].is_object() || after["result"]["isError"] == json!(true), "{after}");
    approver.finish().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_grant_made_with_project_sees_and_starts_in_that_project_only() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    crate::chat_bridge::add_repository(&home, &dir.path().join("web")).await;
    // A project that is not there: refused by the CLI before anything is granted.
    let (code, _, err) =
        cli(&home, &["mcp", "grant", "ghost", "--scope", "start", "--project", "nope"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("no project \"nope\""), "{err}");
    let (code, out, err) =
        cli(&home, &["mcp", "grant", "web-team", "--scope", "start", "--project", "web"]).await;
    assert_eq!(code, 0, "{err}");
    let credential = out.lines().find(|l| l.starts_with("nucleic-mcp-")).unwrap().to_owned();
    let (_, listed, _) = cli(&home, &["mcp", "list"]).await;
    assert!(listed.contains("web-team") && listed.contains("projects "), "{listed}");

    let mut mcp = Mcp::start(&home, &credential).await;
    let projects = mcp.call("list_projects", json!({})).await;
    let roots: Vec<&str> =
        projects.as_array().unwrap().iter().filter_map(|p| p["root"].as_str()).collect();
    assert_eq!(roots.len(), 1, "only its project: {projects}");
    assert!(roots[0].ends_with("web"), "{projects}");
    // The other project, by its id (read as the person): starting there is refused, and no
    // session is made.
    let (_, all, _) = cli(&home, &["project", "list"]).await;
    let other = all
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|fields| fields.get(1) == Some(&"repo"))
        .map(|fields| fields[0].to_owned())
        .unwrap_or_else(|| panic!("{all}"));
    let why = mcp.refused("start_session", json!({"project_id": other, "prompt": "say hi"})).await;
    assert!(why.contains("not one it covers") && why.contains("web-team"), "{why}");
    let (_, sessions, _) = cli(&home, &["session", "list"]).await;
    assert!(sessions.trim().is_empty(), "a session was started: {sessions}");
    // Its own project: started.
    let web = projects[0]["projectID"].as_str().unwrap().to_owned();
    let started = mcp.call("start_session", json!({"project_id": web, "prompt": "say hi"})).await;
    assert_eq!(started["projectID"], json!(web), "{started}");
    mcp.finish().await;
}
