//! `nucleic acp` against bad and hostile input, over raw JSON-RPC lines: malformed JSON, a
//! JSON-RPC batch, unknown methods, a reused id, a 10 MB line, a `cwd` outside every project,
//! a session of another project, a prompt for a session never attached, 50 prompts at once —
//! each answered with the protocol's error codes while it keeps serving, and nothing done. And
//! a client that never reads: Nucleic's memory stays bounded, and once it reads again it gets
//! every update, in order.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::acp::host_client;
use crate::chat_bridge::{add_repository, setup};
use crate::support::nucleic;

const WITHIN: Duration = Duration::from_secs(30);

/// One `nucleic acp` and its stdio, read line by line.
struct Raw {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    /// Messages read while waiting for another.
    seen: Vec<Value>,
}

impl Raw {
    async fn start(home: &Path) -> Raw {
        let mut child = tokio::process::Command::new(nucleic())
            .args(["acp", "--agent", "sim"])
            .env("NUCLEIC_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut raw = Raw { child, stdin, lines, seen: Vec::new() };
        raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}))
            .await;
        let init = raw.reply_to(&json!(1)).await;
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        raw
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next message, within 30 s.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WITHIN, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("nothing from nucleic acp within {WITHIN:?}"))
            .unwrap()
            .expect("nucleic acp closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next response with `id` (notifications and other responses are kept in `seen`).
    async fn reply_to(&mut self, id: &Value) -> Value {
        if let Some(at) = self.seen.iter().position(|m| &m["id"] == id && m.get("method").is_none())
        {
            return self.seen.remove(at);
        }
        loop {
            let message = self.next().await;
            if &message["id"] == id && message.get("method").is_none() {
                return message;
            }
            self.seen.push(message);
        }
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.reply_to(&json!(id)).await
    }

    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("nucleic acp exits within 20 s of its stdin closing")
            .unwrap();
        assert!(status.success(), "{status}");
    }
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {reply}"))
}

/// VmHWM (peak resident set) and VmRSS of `pid`, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_json_rpc_errors_and_does_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let repo = dir.path().join("repo");
    let mut acp = Raw::start(&home).await;
    let pid = acp.child.id().unwrap();

    // Malformed JSON: a parse error (id null), and it goes on serving.
    acp.send_line("{this is not json").await;
    let parse = acp.reply_to(&Value::Null).await;
    assert_eq!(code(&parse), -32700, "{parse}");
    // A batch is not ACP: one invalid-request error.
    acp.send_line(
        r#"[{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}]"#,
    )
    .await;
    let batch = acp.reply_to(&Value::Null).await;
    assert_eq!(code(&batch), -32600, "{batch}");
    // Unknown methods: method not found (authentication too: none is offered).
    assert_eq!(code(&acp.request(4, "no/such/method", json!({})).await), -32601);
    assert_eq!(code(&acp.request(5, "session/list", json!({})).await), -32601);
    assert_eq!(
        code(&acp.request(6, "fs/read_text_file", json!({"path": "/etc/passwd"})).await),
        -32601
    );

    // A 10 MB line: dropped unread (answered as a parse error naming the limit), memory flat.
    let (peak_before, _) = memory_kib(pid);
    let huge = json!({"jsonrpc": "2.0", "id": 7, "method": "session/new",
        "params": {"cwd": format!("/{}", "x".repeat(10 * 1024 * 1024)), "mcpServers": []}});
    acp.send(&huge).await;
    let dropped = acp.reply_to(&Value::Null).await;
    assert_eq!(
        code(&dropped),
        -32700,
        "{}",
        &dropped.to_string()[..300.min(dropped.to_string().len())]
    );
    assert!(dropped.to_string().contains("dropped unread"), "{dropped}");
    assert!(dropped.to_string().len() < 4096, "the answer echoes the line");
    let (peak_after, _) = memory_kib(pid);
    eprintln!(
        "peak RSS of nucleic acp: {peak_before} KiB before the 10 MB line, {peak_after} KiB after"
    );
    assert!(peak_after < peak_before + 4 * 1024, "grew from {peak_before} to {peak_after} KiB");

    // A cwd outside every project (the projects' parent, and / ): refused, no session made.
    let outside = acp.request(8, "session/new", json!({"cwd": dir.path(), "mcpServers": []})).await;
    assert_eq!(code(&outside), -32602, "{outside}");
    assert!(
        outside["error"]["message"].as_str().unwrap().contains("in no Nucleic project"),
        "{outside}"
    );
    let root = acp.request(9, "session/new", json!({"cwd": "/", "mcpServers": []})).await;
    assert_eq!(code(&root), -32602, "{root}");
    let relative = acp.request(10, "session/new", json!({"cwd": "repo", "mcpServers": []})).await;
    assert_eq!(code(&relative), -32602, "{relative}");
    let mut host = host_client(&home).await;
    assert!(host.list_sessions(None, true).await.unwrap().is_empty(), "a session was made");

    // A prompt for a session not attached here (made up): refused, nothing sent anywhere.
    let stray = acp
        .request(
            11,
            "session/prompt",
            json!({"sessionId": "made-up", "prompt": [{"type": "text", "text": "run touch x"}]}),
        )
        .await;
    assert_eq!(code(&stray), -32602, "{stray}");

    // A reused id: two requests in flight under id 12, both answered (the SDK's rule).
    let slow = json!({"jsonrpc": "2.0", "id": 12, "method": "session/new",
        "params": {"cwd": repo, "mcpServers": []}});
    let fast = json!({"jsonrpc": "2.0", "id": 12, "method": "no/such/method"});
    acp.send(&slow).await;
    acp.send(&fast).await;
    let one = acp.reply_to(&json!(12)).await;
    let two = acp.reply_to(&json!(12)).await;
    let created = [&one, &two].into_iter().find(|r| r["result"]["sessionId"].is_string());
    let missing = [&one, &two].into_iter().find(|r| r["error"]["code"] == -32601);
    assert!(created.is_some() && missing.is_some(), "{one}\n{two}");
    let mine = created.unwrap()["result"]["sessionId"].as_str().unwrap().to_owned();
    // `session/new` starts the agent idle: no turn until the first prompt (an empty newSession).
    let summary = host.session(&mine).await.unwrap();
    assert_eq!(summary.status, nucleic_protocol::SessionStatus::Idle, "{summary:?}");
    let events = host.events_window(&mine, 1, summary.last_seq, 1000, WITHIN).await.unwrap();
    assert!(
        !events.iter().any(|e| matches!(e.kind, nucleic_protocol::EventKind::UserText(_))),
        "a turn was sent: {events:?}"
    );

    // 50 prompts at once for one session: each answered once, a turn at a time (the others
    // refused while one runs).
    let mut batch = String::new();
    for id in 100..150 {
        let prompt = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {
            "sessionId": mine, "prompt": [{"type": "text", "text": "say hi"}]}});
        batch.push_str(&format!("{prompt}\n"));
    }
    acp.send_line(batch.trim_end()).await;
    let mut turns = 0;
    for id in 100..150 {
        let reply = acp.reply_to(&json!(id)).await;
        match reply["result"]["stopReason"].as_str() {
            Some("end_turn") => turns += 1,
            _ => assert_eq!(code(&reply), -32600, "{reply}"),
        }
    }
    assert!(turns >= 1, "no prompt got a turn");
    assert!(acp.seen.iter().all(|m| m.get("method").is_some()), "a reply twice: {:?}", acp.seen);

    // A mode for a session without a policy (the simulated agent): the host's refusal.
    let mode =
        acp.request(15, "session/set_mode", json!({"sessionId": mine, "modeId": "full"})).await;
    assert_eq!(code(&mode), -32600, "{mode}");
    assert!(mode["error"]["message"].as_str().unwrap().contains("no policy"), "{mode}");

    // A session of another project cannot be loaded from this project's folder.
    let other = dir.path().join("other");
    add_repository(&home, &other).await;
    let theirs = acp.request(13, "session/new", json!({"cwd": other, "mcpServers": []})).await;
    let theirs = theirs["result"]["sessionId"].as_str().unwrap().to_owned();
    let mut outsider = Raw::start(&home).await;
    let load = outsider
        .request(2, "session/load", json!({"sessionId": theirs, "cwd": repo, "mcpServers": []}))
        .await;
    assert_eq!(code(&load), -32602, "{load}");
    assert!(
        load["error"]["message"].as_str().unwrap().contains("not a session of the project"),
        "{load}"
    );
    // Nothing of it reached the outsider, and its prompt is refused: it never got attached.
    let prompt = outsider
        .request(
            3,
            "session/prompt",
            json!({"sessionId": theirs, "prompt": [{"type": "text", "text": "run touch stolen"}]}),
        )
        .await;
    assert_eq!(code(&prompt), -32602, "{prompt}");
    assert!(
        outsider.seen.iter().all(|m| m["params"]["sessionId"] != json!(theirs)),
        "updates of another project's session: {:?}",
        outsider.seen
    );
    outsider.finish().await;

    // Still serving after all of it; stdin closed, it exits and the sessions stay.
    assert_eq!(
        acp.request(14, "initialize", json!({"protocolVersion": 1})).await["result"]["protocolVersion"],
        1
    );
    acp.finish().await;
    let sessions = host.list_sessions(None, true).await.unwrap();
    assert!(
        sessions.iter().any(|s| s.session_id == mine)
            && sessions.iter().any(|s| s.session_id == theirs)
    );
    assert!(sessions.iter().all(|s| !s.status.is_terminal()), "{sessions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_holds_nucleic_acp_bounded_and_then_gets_everything_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _guard) = setup(dir.path()).await;
    let repo = dir.path().join("repo");
    let mut acp = Raw::start(&home).await;
    let pid = acp.child.id().unwrap();
    let created = acp.request(2, "session/new", json!({"cwd": repo, "mcpServers": []})).await;
    let id = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let (_, rss_before) = memory_kib(pid);

    // A long, fast turn; the client stops reading.
    acp.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
        "sessionId": id, "prompt": [{"type": "text", "text": "stream 20000 fast"}]}}))
        .await;
    let mut host = host_client(&home).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    let last = loop {
        let summary = host.session(&id).await.unwrap();
        if summary.status == nucleic_protocol::SessionStatus::AwaitingInput
            && summary.last_seq > 15_000
        {
            break summary.last_seq;
        }
        assert!(Instant::now() < deadline, "the turn did not end within 90 s: {summary:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (peak, rss) = memory_kib(pid);
    eprintln!(
        "nucleic acp while its client did not read {last} events: {rss_before} KiB before, \
         {rss} KiB now, {peak} KiB peak"
    );
    assert!(rss < rss_before + 4 * 1024, "grew from {rss_before} to {rss} KiB");

    // Reading again: every update, in seq order, then the prompt's answer.
    let mut seqs = Vec::new();
    let answer = loop {
        let message = acp.next().await;
        if message["id"] == json!(3) {
            break message;
        }
        if message["method"] == "session/update" {
            seqs.push(message["params"]["_meta"]["nucleic"]["seq"].as_u64().unwrap());
        }
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "out of order or twice");
    assert!(seqs.len() > 15_000, "only {} updates", seqs.len());
    acp.finish().await;
}
