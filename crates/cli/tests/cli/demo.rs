//! `nucleic demo`: the JSON line, sign-in, the three sessions over the API, files of the
//! finished one, `--no-sessions`, and a clean stop on SIGTERM (agents stopped, temp dirs gone).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

use crate::support::nucleic;
use crate::web_signin::{get, register_device};

/// A running `nucleic demo --json`; killed when dropped.
struct Demo {
    child: tokio::process::Child,
    info: Value,
}

impl Demo {
    async fn start(extra: &[&str]) -> Demo {
        let mut child = tokio::process::Command::new(nucleic())
            .arg("demo")
            .arg("--json")
            .args(extra)
            .env_remove("NUCLEIC_HOME")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(90), lines.next_line()).await;
        let Ok(Ok(Some(line))) = line else {
            let mut err = String::new();
            let _ = child.kill().await;
            child.stderr.take().unwrap().read_to_string(&mut err).await.unwrap();
            panic!("no JSON line from nucleic demo; stderr: {err}");
        };
        let info: Value = serde_json::from_str(&line).unwrap();
        Demo { child, info }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.info["port"])
    }

    /// Sends SIGTERM and waits for a clean exit.
    async fn stop(mut self) -> i32 {
        let pid = i32::try_from(self.child.id().unwrap()).unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM)
            .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .unwrap()
            .unwrap();
        status.code().unwrap_or(-1)
    }
}

/// `POST /api/message` with `auth` (an `Authorization` header line without its CRLF).
async fn api(demo: &Demo, auth: &str, message: Value) -> Value {
    let port = demo.info["port"].as_u64().unwrap();
    let body = message.to_string();
    let mut s =
        tokio::net::TcpStream::connect(("127.0.0.1", u16::try_from(port).unwrap())).await.unwrap();
    let request = format!(
        "POST /api/message HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (_, body) = out.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Signs a device in with the demo's link (as the web app does), then returns the token's
/// `Authorization` header for the one-shot API (which only the token opens).
async fn sign_in(demo: &Demo) -> String {
    let url = demo.info["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/login?token=", demo.base())), "{url}");
    let (status, body) = register_device(url, "demo browser").await;
    assert_eq!(status, 200, "{body}");
    let home = Path::new(demo.info["home"].as_str().unwrap());
    let token = std::fs::read_to_string(home.join("token")).unwrap();
    format!("Authorization: Bearer {}", token.trim())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_serves_three_sessions_and_cleans_up_on_sigterm() {
    let demo = Demo::start(&[]).await;
    let info = demo.info.clone();
    let (home, repo) = (info["home"].as_str().unwrap(), info["repo"].as_str().unwrap());
    assert!(Path::new(home).is_dir() && Path::new(repo).join(".git").is_dir(), "{info}");
    let mode = std::fs::metadata(home).unwrap().permissions();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o700, "a private home");
    let roles: Vec<(&str, &str)> = info["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["role"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        roles,
        [
            ("streaming", "running"),
            ("approval", "awaiting-approval"),
            ("finished", "awaiting-input")
        ]
    );
    let auth = sign_in(&demo).await;
    let (page_status, _, page) = get(&format!("{}/", demo.base()), "").await;
    assert_eq!(page_status, 200);
    assert!(page.contains("<html"), "{page}");

    let listed = api(&demo, &auth, json!({"type": "listSessions", "messageID": "l"})).await;
    let mut by_id = std::collections::HashMap::new();
    for s in listed["sessions"].as_array().unwrap() {
        by_id.insert(s["sessionID"].as_str().unwrap().to_owned(), s.clone());
    }
    let id = |i: usize| info["sessions"][i]["sessionID"].as_str().unwrap().to_owned();
    assert_eq!(by_id.len(), 3, "{listed}");
    assert_eq!(by_id[&id(0)]["status"], "running");
    assert_eq!(by_id[&id(1)]["status"], "awaiting-approval");
    assert_eq!(by_id[&id(1)]["pendingApprovals"], 1);
    assert_eq!(by_id[&id(2)]["status"], "awaiting-input");
    assert!(by_id.values().all(|s| s["projectID"] == info["projectID"]));

    // The streaming one is still streaming a second later (its seq keeps growing).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let again = api(&demo, &auth, json!({"type": "listSessions", "messageID": "l2"})).await;
    let later = again["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionID"] == id(0).as_str())
        .unwrap()
        .clone();
    assert_eq!(later["status"], "running");
    assert!(later["lastSeq"].as_u64() > by_id[&id(0)]["lastSeq"].as_u64(), "{later}");

    // The finished one has a diff vs its base, and its files can be read.
    let facts =
        api(&demo, &auth, json!({"type": "gitFacts", "messageID": "g", "sessionID": id(2)})).await;
    let files: Vec<&str> = facts["facts"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["tests/test_lines.py", "wordcount/core.py"], "{facts}");
    let file = api(&demo, &auth, json!({"type": "readFile", "messageID": "r", "sessionID": id(2), "path": "wordcount/core.py"})).await;
    assert!(file["file"]["content"].as_str().unwrap().contains("len(text.splitlines())"), "{file}");
    let listing = api(
        &demo,
        &auth,
        json!({"type": "listFiles", "messageID": "f", "sessionID": id(2), "recursive": true}),
    )
    .await;
    assert!(
        listing["entries"].as_array().unwrap().iter().any(|e| e["path"] == "tests/test_lines.py")
    );

    // The CLI can use the demo's home like a daemon's.
    let out = tokio::process::Command::new(nucleic())
        .args(["session", "list"])
        .env("NUCLEIC_HOME", home)
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Start a changelog"));

    let worktree = by_id[&id(1)]["worktree"]["path"].as_str().unwrap().to_owned();
    assert_eq!(demo.stop().await, 0);
    assert!(!Path::new(home).exists(), "the temporary home is removed");
    assert!(!Path::new(repo).exists() && !Path::new(&worktree).exists(), "the repository too");
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_sessions_the_demo_has_one_project_to_start_sessions_in() {
    let kept = tempfile::tempdir().unwrap();
    let home = kept.path().join("home");
    let demo = Demo::start(&["--no-sessions", "--home", home.to_str().unwrap()]).await;
    assert_eq!(demo.info["sessions"], json!([]));
    assert_eq!(demo.info["home"], home.to_str().unwrap());
    let auth = sign_in(&demo).await;
    let projects = api(&demo, &auth, json!({"type": "listProjects", "messageID": "p"})).await;
    assert_eq!(projects["projects"][0]["projectID"], demo.info["projectID"]);
    assert_eq!(projects["projects"][0]["defaultBranch"], "main");
    let created = api(
        &demo,
        &auth,
        json!({"type": "intent", "messageID": "n", "intent": {"kind": "newSession", "projectID": demo.info["projectID"], "backend": "simulated", "prompt": "write hi.txt containing hi"}}),
    )
    .await;
    assert_eq!(created["type"], "ack", "{created}");
    let session = created["result"]["sessionID"].as_str().unwrap().to_owned();
    let project = demo.info["projectID"].clone();
    assert_eq!(demo.stop().await, 0);
    assert!(home.join("catalog.sqlite").is_file(), "a home given with --home is kept");
    assert!(home.join("demo-repo/wordcount/.git").is_dir(), "and its repository");
    assert!(!home.join("daemon.json").exists());

    // Started again on the same home: the same project, the earlier session, the same token.
    let again = Demo::start(&["--no-sessions", "--home", home.to_str().unwrap()]).await;
    assert_eq!(again.info["projectID"], project);
    let listed = api(&again, &auth, json!({"type": "listSessions", "messageID": "l"})).await;
    assert_eq!(listed["type"], "sessions", "the same token still works: {listed}");
    assert_eq!(listed["sessions"][0]["sessionID"], session.as_str());
    assert_eq!(again.stop().await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_can_print_a_link_that_has_already_expired() {
    let demo = Demo::start(&["--no-sessions", "--login-link-ttl", "0"]).await;
    let (status, body) = register_device(demo.info["url"].as_str().unwrap(), "late").await;
    assert_eq!(status, 401);
    assert!(body.contains("invalid, expired or already used"), "{body}");
    assert_eq!(demo.stop().await, 0);
}
