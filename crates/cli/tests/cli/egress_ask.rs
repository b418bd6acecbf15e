//! Asked domains end to end, by effect, through the daemon and the `nucleic` CLI (as root, in
//! its own network and mount namespaces: a web server on an address that is not loopback, names
//! for it in a private `/etc/hosts`). A confined simulated agent's command fetches from a name
//! off the allow-list: the fetch waits on an `egress` approval, which `session approve` allows
//! (the server hears it, the next fetch is not asked), `session deny` refuses (the server hears
//! nothing, `egressRefused` says a person denied it), `approve --always` adds to the project's
//! sandbox (a running and a new session reach it unasked), and nobody answering times out. The agent
//! cannot reach the host's socket or token, and IP literals and `localhost` are never asked.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::daemon::{DaemonGuard, cli_env, git};

/// The web server's address: not loopback, so a name may lead there.
pub(crate) const ELSEWHERE: &str = "10.77.0.2";

/// The environment every CLI call (and so the daemon it starts) gets.
const ENV: &[(&str, &str)] =
    &[("NUCLEIC_AGENT_ISOLATION", "bwrap"), ("NUCLEIC_EGRESS_ASK_TIMEOUT", "6")];

/// Answers every request `ok` and keeps each request's first line and Host header.
pub(crate) struct Web {
    pub(crate) port: u16,
    heard: Arc<Mutex<Vec<String>>>,
}

impl Web {
    pub(crate) fn start() -> Web {
        let listener = TcpListener::bind((ELSEWHERE, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let seen = heard.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                        head.push(b[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let host = head.lines().find(|l| l.to_ascii_lowercase().starts_with("host:"));
                    let first = head.lines().next().unwrap_or_default();
                    seen.lock().unwrap().push(format!("{first} {}", host.unwrap_or_default()));
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                });
            }
        });
        Web { port, heard }
    }

    pub(crate) fn heard(&self, name: &str) -> Vec<String> {
        self.heard.lock().unwrap().iter().filter(|h| h.contains(name)).cloned().collect()
    }
}

/// Gives this namespace an address that is not loopback and names for it.
fn names_elsewhere(dir: &Path) {
    names_at_elsewhere(dir, "once.test deny.test always.test late.test");
}

/// Gives this namespace an address that is not loopback and `names` (space-separated) for it.
pub(crate) fn names_at_elsewhere(dir: &Path, names: &str) {
    let add = std::process::Command::new("ip")
        .args(["addr", "add", &format!("{ELSEWHERE}/32"), "dev", "lo"])
        .status()
        .unwrap();
    assert!(add.success());
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, format!("127.0.0.1 localhost\n::1 localhost\n{ELSEWHERE} {names}\n"))
        .unwrap();
    let bound = std::process::Command::new("mount")
        .args(["--bind", hosts.to_str().unwrap(), "/etc/hosts"])
        .status()
        .unwrap();
    assert!(bound.success(), "bind-mounting /etc/hosts failed");
}

struct Daemon {
    home: PathBuf,
    project: String,
    _guard: DaemonGuard,
}

impl Daemon {
    async fn cli(&self, args: &[&str]) -> (i32, String, String) {
        cli_env(&self.home, args, ENV).await
    }

    /// Starts a confined sim session running `script`; its id.
    async fn session(&self, script: &str) -> String {
        let prompt = format!("run {script}");
        let args = [
            "session",
            "new",
            "--project",
            &self.project,
            "--agent",
            "sim",
            "--permission-mode",
            "bypassPermissions",
            &prompt,
        ];
        let (code, out, err) = self.cli(&args).await;
        assert_eq!(code, 0, "{err}");
        out.split_whitespace().next().unwrap().to_owned()
    }

    fn events(&self, session: &str) -> Vec<Value> {
        let path = self.home.join("sessions").join(session).join("transcript.jsonl");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The session's pending approvals as `session show` lists them, once there are any.
    async fn asked(&self, session: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let (_, out, _) = self.cli(&["session", "show", session]).await;
            if let Ok(v) = serde_json::from_str::<Value>(&out)
                && v["pendingApprovals"].as_u64().unwrap_or(0) > 0
            {
                return v["approvals"].as_array().cloned().unwrap_or_default();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no approval in session {session} within 30 s: {:?}", self.events(session));
    }

    /// The session's tool output once its probe is done.
    async fn output(&self, session: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let results: Vec<String> = self
                .events(session)
                .iter()
                .filter(|e| e["kind"]["type"] == "toolResult")
                .map(|e| e["kind"]["content"].to_string())
                .collect();
            let text = results.join("\n");
            if text.contains("probe-done") {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("session {session}'s probe did not finish within 60 s: {:?}", self.events(session));
    }

    fn of_type(&self, session: &str, kind: &str) -> Vec<Value> {
        self.events(session)
            .into_iter()
            .filter(|e| e["kind"]["type"] == kind)
            .map(|e| e["kind"].clone())
            .collect()
    }
}

fn fetch(url: &str) -> String {
    format!(
        "curl -sS -m 60 --noproxy '' -x http://127.0.0.1:3128 -w ' code=%{{http_code}}' {url}; echo"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_asked_domain_is_answered_from_the_cli_allow_deny_always_or_not_at_all() {
    if nucleic_testkit::isolated!(
        "an_asked_domain_is_answered_from_the_cli_allow_deny_always_or_not_at_all",
        mounts
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    names_elsewhere(dir.path());
    let web = Web::start();
    let p = web.port;
    let home = dir.path().join("nucleic-home");
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README"), "hi\n").unwrap();
    git(&root, &["add", "README"]);
    git(&root, &["commit", "-qm", "init"]);
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], ENV).await;
    assert_eq!(code, 0, "{err}");
    let d = Daemon {
        home: home.clone(),
        project: project.trim().to_owned(),
        _guard: DaemonGuard(home.clone()),
    };

    // Allow: the fetch waits on the question, then reaches the server; the next is not asked.
    let once = d
        .session(&format!(
            "{}; {}; echo probe-done",
            fetch(&format!("http://once.test:{p}/a")),
            fetch(&format!("http://once.test:{p}/b"))
        ))
        .await;
    let asked = d.asked(&once).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["toolName"], "egress");
    assert_eq!(asked[0]["description"], format!("allow network access to once.test:{p}?"));
    assert!(web.heard("once.test").is_empty(), "reached before the answer");
    let (code, _, err) = d.cli(&["session", "approve", &once]).await;
    assert_eq!(code, 0, "{err}");
    let output = d.output(&once).await;
    assert_eq!(output.matches("ok code=200").count(), 2, "{output}");
    assert_eq!(web.heard("once.test").len(), 2, "{:?}", web.heard("once.test"));
    assert_eq!(d.of_type(&once, "approvalRequested").len(), 1, "the second fetch was asked");

    // Deny, with an attack first: the host's socket and token, an IP literal and localhost.
    let daemon_json: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join("daemon.json")).unwrap()).unwrap();
    let dport = daemon_json["port"].as_u64().unwrap();
    let token = std::fs::read_to_string(home.join("token")).unwrap();
    let h = home.display();
    let script = format!(
        "cat {h}/token; ls {h}/daemon.sock && echo socket-seen; \
         curl -sS -m 5 http://127.0.0.1:{dport}/ && echo daemon-reached; \
         {}; {}; {}; echo probe-done",
        fetch(&format!("http://127.0.0.1:{dport}/api/message")),
        fetch(&format!("http://localhost:{dport}/")),
        fetch(&format!("http://deny.test:{p}/")),
    );
    let denied = d.session(&script).await;
    let asked = d.asked(&denied).await;
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["description"], format!("allow network access to deny.test:{p}?"));
    let (code, _, err) = d.cli(&["session", "deny", &denied, "not this one"]).await;
    assert_eq!(code, 0, "{err}");
    let output = d.output(&denied).await;
    assert!(!output.contains(token.trim()), "the agent read the token: {output}");
    assert!(!output.contains("socket-seen") && !output.contains("daemon-reached"), "{output}");
    assert_eq!(output.matches("code=403").count(), 3, "{output}");
    assert!(web.heard("deny.test").is_empty());
    let asked_hosts: Vec<String> = d
        .of_type(&denied, "approvalRequested")
        .iter()
        .map(|a| a["input"]["host"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(asked_hosts, ["deny.test"], "a literal or localhost was asked");
    let refused = d.of_type(&denied, "egressRefused");
    let why = refused.iter().find(|r| r["host"] == "deny.test").expect("deny.test refused");
    let reason = why["reason"].as_str().unwrap();
    assert!(reason.contains("denied it") && reason.contains("not this one"), "{reason}");
    assert!(
        refused.iter().any(|r| r["host"] == "127.0.0.1")
            && refused.iter().any(|r| r["host"] == "localhost"),
        "{refused:?}"
    );

    // Always: the project's sandbox keeps it, a session already running reaches it unasked (its
    // proxy was told), and so does a new one. The running one fetches once the test says go.
    let running = d
        .session(&format!(
            "for i in $(seq 300); do [ -f go ] && break; sleep 0.1; done; {}; echo probe-done",
            fetch(&format!("http://always.test:{p}/running"))
        ))
        .await;
    let always = d
        .session(&format!("{}; echo probe-done", fetch(&format!("http://always.test:{p}/"))))
        .await;
    d.asked(&always).await;
    let (code, _, err) = d.cli(&["session", "approve", &always, "--always"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(d.output(&always).await.contains("ok code=200"));
    let (code, shown, err) = d.cli(&["project", "sandbox", &d.project]).await;
    assert_eq!(code, 0, "{err}");
    assert!(shown.contains(&format!("always.test:{p}")), "{shown}");
    let again = d
        .session(&format!("{}; echo probe-done", fetch(&format!("http://always.test:{p}/"))))
        .await;
    assert!(d.output(&again).await.contains("ok code=200"));
    assert!(d.of_type(&again, "approvalRequested").is_empty(), "asked again after always");
    let (_, shown, _) = d.cli(&["session", "show", &running]).await;
    let shown: Value = serde_json::from_str(&shown).unwrap();
    let worktree = PathBuf::from(shown["worktree"]["path"].as_str().unwrap());
    std::fs::write(worktree.join("go"), "").unwrap();
    assert!(d.output(&running).await.contains("ok code=200"));
    assert!(d.of_type(&running, "approvalRequested").is_empty(), "the running proxy asked");
    assert_eq!(web.heard("always.test").len(), 3, "{:?}", web.heard("always.test"));
    assert_eq!(web.heard("/running").len(), 1);

    // Nobody answers: refused when the question times out, resolved as cancelled.
    let started = Instant::now();
    let late =
        d.session(&format!("{}; echo probe-done", fetch(&format!("http://late.test:{p}/")))).await;
    let output = d.output(&late).await;
    assert!(output.contains("code=403") && output.contains("timed out"), "{output}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    let resolved = d.of_type(&late, "approvalResolved");
    assert!(
        resolved.iter().any(|r| r["decision"] == "cancelled" && r["by"] == "host:timeout"),
        "{resolved:?}"
    );
    let refused = d.of_type(&late, "egressRefused");
    assert!(
        refused.iter().any(|r| r["reason"].as_str().unwrap_or("").contains("timed out")),
        "{refused:?}"
    );
    assert!(web.heard("late.test").is_empty());
}
