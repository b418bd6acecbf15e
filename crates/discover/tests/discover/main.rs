//! Discovery over real folders laid out as Claude Code and Codex lay them out: what is found,
//! what is left out, what is skipped and why, live processes, bounds, and that nothing changes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

mod real_clis;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use nucleic_discover::{Discovery, Homes, Limits, Turns, discover, running_agents};
use nucleic_protocol::Backend;
use pretty_assertions::assert_eq;
use serde_json::json;

/// A person's machine: a checkout, its sibling, and both CLIs' folders.
struct Machine {
    _dir: tempfile::TempDir,
    checkout: PathBuf,
    sibling: PathBuf,
    homes: Homes,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let checkout = root.join("app");
        let sibling = root.join("app-x");
        for d in [&checkout, &sibling, &checkout.join("sub")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let homes = Homes { claude: Some(root.join(".claude")), codex: Some(root.join(".codex")) };
        Machine { _dir: dir, checkout, sibling, homes }
    }

    fn slug(cwd: &Path) -> String {
        cwd.to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    }

    /// A Claude Code transcript of `prompts` in `cwd`; returns its path.
    fn claude(&self, cwd: &Path, id: &str, prompts: &[&str], extra: &[String]) -> PathBuf {
        let dir = self.homes.claude.as_ref().unwrap().join("projects").join(Self::slug(cwd));
        std::fs::create_dir_all(&dir).unwrap();
        let mut lines = Vec::new();
        for (i, p) in prompts.iter().enumerate() {
            let at = format!("2026-12-0{}T09:00:00.000Z", i + 1);
            let common =
                json!({"cwd": cwd, "sessionId": id, "version": "2.1.332", "timestamp": at});
            let mut user = json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": p}]}});
            let mut assistant = json!({"type": "assistant", "message": {"role": "assistant", "model": "claude-opus-5-5", "content": [{"type": "text", "text": "ok"}]}});
            for v in [&mut user, &mut assistant] {
                v.as_object_mut().unwrap().extend(common.as_object().unwrap().clone());
            }
            lines.push(user.to_string());
            lines.push(assistant.to_string());
        }
        lines.extend(extra.iter().cloned());
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    /// A Codex rollout of `prompts` in `cwd`; returns its path.
    fn codex(&self, cwd: &Path, id: &str, when: &str, prompts: &[&str]) -> PathBuf {
        let day = &when[..10].replace('-', "/");
        let dir = self.homes.codex.as_ref().unwrap().join("sessions").join(day);
        std::fs::create_dir_all(&dir).unwrap();
        let line = |t: &str, payload: serde_json::Value| {
            json!({"timestamp": format!("{when}Z"), "type": t, "payload": payload}).to_string()
        };
        let mut lines = vec![
            line(
                "session_meta",
                json!({"id": id, "cwd": cwd, "cli_version": "0.171.0", "base_instructions": "x".repeat(20_000)}),
            ),
            line("turn_context", json!({"model": "gpt-5.5"})),
        ];
        for p in prompts {
            lines.push(line("event_msg", json!({"type": "user_message", "message": p})));
            lines.push(line("event_msg", json!({"type": "task_complete"})));
        }
        let path = dir.join(format!("rollout-{}-{id}.jsonl", when.replace(':', "-")));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    }

    fn discover(&self, running: &[nucleic_discover::LiveProcess]) -> Discovery {
        discover(&self.checkout, &self.homes, Limits::default(), running).unwrap()
    }
}

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                let modified = e.metadata().unwrap().modified().unwrap();
                out.insert(p.clone(), (std::fs::read(&p).unwrap(), modified));
            }
        }
    }
    out
}

#[test]
fn a_checkouts_own_sessions_of_both_clis_are_found_and_nothing_else() {
    let m = Machine::new();
    let sub = m.checkout.join("sub");
    m.claude(&m.checkout, "c-main-0001", &["fix the flaky login test", "and the other one"], &[]);
    m.claude(&sub, "c-sub-00001", &["tidy sub"], &[]);
    m.claude(&m.sibling, "c-sibling-1", &["not this project"], &[]);
    m.claude(&m.checkout.join(".nucleic/worktrees/fix-1"), "c-nucleic-1", &["nucleic's own"], &[]);
    m.codex(&m.checkout, "x-main-0001", "2026-12-02T10:00:00", &["add a retry"]);
    m.codex(&m.sibling, "x-other-001", "2026-12-03T10:00:00", &["elsewhere"]);
    let root = m.checkout.parent().unwrap().to_owned();
    let before = snapshot(&root);

    let found = m.discover(&[]);
    let mut sorted: Vec<(&str, Backend)> =
        found.sessions.iter().map(|s| (s.id.as_str(), s.backend)).collect();
    sorted.sort_by_key(|(id, _)| *id);
    assert_eq!(
        sorted,
        [
            ("c-main-0001", Backend::ClaudeCode),
            ("c-sub-00001", Backend::ClaudeCode),
            ("x-main-0001", Backend::Codex)
        ]
    );
    let main = found.sessions.iter().find(|s| s.id == "c-main-0001").unwrap();
    assert_eq!(main.title.as_deref(), Some("fix the flaky login test"));
    assert_eq!(main.turns, Turns::Exact(2));
    assert_eq!(main.model.as_deref(), Some("claude-opus-5-5"));
    assert_eq!(main.last_at.as_deref(), Some("2026-12-02T09:00:00.000Z"));
    assert!(main.cwd_exists && main.live.is_none());
    let codex = found.sessions.iter().find(|s| s.id == "x-main-0001").unwrap();
    assert_eq!(
        (codex.title.as_deref(), codex.model.as_deref()),
        (Some("add a retry"), Some("gpt-5.5"))
    );
    assert!(found.skipped.is_empty() && found.truncated.is_none(), "{found:?}");
    assert_eq!(snapshot(&root), before, "discovery changed a file");
}

#[test]
fn broken_newer_and_orphaned_sessions_are_said_as_such() {
    let m = Machine::new();
    let newer = vec![json!({"type": "brand-new-line", "cwd": m.checkout}).to_string()];
    m.claude(&m.checkout, "c-newer-001", &["from a newer CLI"], &newer);
    let torn = m.claude(&m.checkout, "c-torn-0001", &["torn at the end"], &["not json".into()]);
    std::fs::write(&torn, std::fs::read_to_string(&torn).unwrap() + "{\"type\":\"user\",\"mess")
        .unwrap();
    let corrupt = m.claude(&m.checkout, "c-corrupt-1", &[], &[]);
    std::fs::write(&corrupt, b"\x00\xffnot a transcript\n").unwrap();
    let gone = m.checkout.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    m.claude(&gone, "c-gone-0001", &["in a folder since removed"], &[]);
    std::fs::remove_dir(&gone).unwrap();

    let found = m.discover(&[]);
    let by_id = |id: &str| {
        found.sessions.iter().find(|s| s.id == id).unwrap_or_else(|| panic!("{id}: {found:?}"))
    };
    assert_eq!(by_id("c-newer-001").unknown_lines, 1);
    assert_eq!(by_id("c-torn-0001").bad_lines, 1, "the corrupt line counts, the torn last one not");
    assert_eq!(by_id("c-torn-0001").turns, Turns::Exact(1), "the torn line is not a turn");
    assert!(!by_id("c-gone-0001").cwd_exists);
    assert_eq!(found.skipped.len(), 1, "{found:?}");
    assert_eq!(found.skipped[0].path, corrupt);
    assert!(found.skipped[0].why.contains("not a Claude Code transcript"), "{:?}", found.skipped);
}

#[test]
fn a_symlinked_claude_folder_is_followed() {
    let m = Machine::new();
    m.claude(&m.checkout, "c-linked-01", &["through a link"], &[]);
    let real = m.homes.claude.clone().unwrap();
    let moved = real.with_file_name("dotfiles-claude");
    std::fs::rename(&real, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &real).unwrap();
    assert_eq!(m.discover(&[]).sessions.len(), 1);
}

/// A process whose command line says `program` (bash's `exec -a`), in `cwd`, with `stdin` open.
fn pretend(program: &str, cwd: &Path, stdin: Option<&Path>) -> Child {
    let input = match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
        None => Stdio::null(),
    };
    Command::new("bash")
        .args(["-c", &format!("exec -a {program} sleep 30")])
        .current_dir(cwd)
        .stdin(input)
        .spawn()
        .unwrap()
}

#[test]
fn a_live_cli_on_a_session_is_named_with_how_it_was_told() {
    let m = Machine::new();
    let held = m.claude(&m.checkout, "c-held-0001", &["held open"], &[]);
    m.claude(&m.checkout, "c-free-0001", &["nobody on it"], &[]);
    let mut claude = pretend("claude", &m.checkout, Some(&held));
    let mut codex = pretend("codex", &m.checkout, None);
    std::thread::sleep(Duration::from_millis(300));
    // Written after the codex process started: it is the one in that folder writing it.
    let rollout = m.codex(&m.checkout, "x-live-0001", "2026-12-04T10:00:00", &["live"]);

    let running = running_agents();
    let found = m.discover(&running);
    let _ = (claude.kill(), codex.kill(), claude.wait(), codex.wait());
    let live = |id: &str| found.sessions.iter().find(|s| s.id == id).unwrap().live.clone();
    let held_by = live("c-held-0001").expect("the held session is live");
    assert_eq!(held_by.pid, claude.id());
    assert!(held_by.why.contains("has its file open"), "{}", held_by.why);
    assert_eq!(live("c-free-0001"), None);
    let codex_by = live("x-live-0001").unwrap_or_else(|| panic!("{rollout:?}: {running:?}"));
    assert_eq!(codex_by.pid, codex.id());
    assert!(codex_by.why.contains("runs in its folder"), "{}", codex_by.why);
}

#[test]
fn fifty_thousand_rollouts_stop_at_the_file_limit_saying_so() {
    let m = Machine::new();
    let dir = m.homes.codex.as_ref().unwrap().join("sessions/2026/12/01");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..50_000 {
        std::fs::write(dir.join(format!("rollout-2026-12-01T00-00-00-{i:05}.jsonl")), "").unwrap();
    }
    let limits = Limits { max_files: 2_000, ..Limits::default() };
    let found = discover(&m.checkout, &m.homes, limits, &[]).unwrap();
    assert_eq!(found.examined, 2_000);
    let why = found.truncated.expect("truncated");
    assert!(why.contains("stopped after 2000 session files"), "{why}");
    let limits = Limits { deadline: Duration::ZERO, ..Limits::default() };
    let found = discover(&m.checkout, &m.homes, limits, &[]).unwrap();
    assert!(found.truncated.unwrap().contains("deadline"));
}

#[test]
fn a_session_growing_while_it_is_read_gives_a_consistent_summary() {
    let m = Machine::new();
    let path = m.claude(&m.checkout, "c-growing-1", &["first prompt"], &[]);
    let writer = {
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            for i in 0..3_000 {
                let line =
                    json!({"type": "assistant", "message": {"model": "m", "content": []}, "n": i});
                writeln!(f, "{line}").unwrap();
            }
        })
    };
    for _ in 0..50 {
        let found = m.discover(&[]);
        let s = &found.sessions[0];
        assert_eq!(s.title.as_deref(), Some("first prompt"));
        assert_eq!(s.bad_lines, 0, "a line cut by the window or a write was read as a line");
    }
    writer.join().unwrap();
}

#[test]
fn a_checkout_that_does_not_exist_is_an_error_naming_it() {
    let m = Machine::new();
    let err = discover(&m.checkout.join("nope"), &m.homes, Limits::default(), &[]).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn a_planted_link_to_a_secret_and_a_fifo_are_not_read() {
    // The agent writes its CLI's session folders: it could plant a link to a file the host can
    // read (its title would then show the secret) or a FIFO (an open would wait forever).
    let m = Machine::new();
    let real = m.claude(&m.checkout, "c-real-0001", &["the real one"], &[]);
    let secret_file = m.checkout.parent().unwrap().join("secret.jsonl");
    let secret = "SECRET-7f3a";
    let line = json!({"type": "user", "cwd": m.checkout, "message": {"content": secret}});
    std::fs::write(&secret_file, format!("{line}\n")).unwrap();
    let claude_dir = real.parent().unwrap().to_owned();
    std::os::unix::fs::symlink(&secret_file, claude_dir.join("evil.jsonl")).unwrap();
    let codex_dir = m.homes.codex.as_ref().unwrap().join("sessions/2026/12/05");
    std::fs::create_dir_all(&codex_dir).unwrap();
    std::os::unix::fs::symlink(&secret_file, codex_dir.join("rollout-2026-12-05T00-00-00-e.jsonl"))
        .unwrap();
    for fifo in
        [claude_dir.join("stuck.jsonl"), codex_dir.join("rollout-2026-12-05T00-00-01-f.jsonl")]
    {
        assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    }
    let (send, receive) = std::sync::mpsc::channel();
    let (checkout, homes) = (m.checkout.clone(), m.homes);
    std::thread::spawn(move || {
        let _ = send.send(discover(&checkout, &homes, Limits::default(), &[]).unwrap());
    });
    let found = receive.recv_timeout(Duration::from_secs(20)).expect("discovery hung on a FIFO");
    let shown = format!("{found:?}");
    assert!(!shown.contains(secret), "a planted link was read: {shown}");
    let ids: Vec<&str> = found.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["c-real-0001"]);
}
