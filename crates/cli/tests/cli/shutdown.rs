//! Stopping the daemon (issue 17): SIGTERM to a real `nucleic serve` process with a session of
//! the real pinned `codex` (idle, mid-turn, awaiting approval), of the real `claude` and of the
//! simulated agent ends it within the documented bound, with no agent process left and the
//! transcript saying so, and removes `daemon.json`; a second signal forces exit at once; one host
//! per `NUCLEIC_HOME`, and a CLI never starts a second one beside it. Every wait has its own
//! deadline, well under nextest's.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nucleic_agents::process::{descendants, proc_stat};
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_openai::Script;
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::daemon::{cli_env, git};
use crate::real_codex::{CodexSetup, codex_setup};
use crate::real_codex_host::transcript;
use crate::support::nucleic;

/// The documented bound on a stop (docs/security.md, "One host per home, and stopping").
const STOP_BOUND: Duration = Duration::from_secs(10);

/// A process: pid and start time (a reused pid is another process).
pub(crate) type Proc = (u32, u64);

/// A `nucleic serve` child process on `home`.
pub(crate) struct Serve {
    child: tokio::process::Child,
    pid: u32,
    home: PathBuf,
    log: PathBuf,
}

impl Serve {
    /// Starts `nucleic serve` on `home` (any free loopback port) with `env`; waits (20 s) until
    /// its `daemon.json` names it.
    pub(crate) async fn start(home: &Path, env: &[(String, String)]) -> Serve {
        std::fs::create_dir_all(home).unwrap();
        let log = home.with_extension("serve.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = tokio::process::Command::new(nucleic())
            .args(["serve", "--bind", "127.0.0.1:0", "--home"])
            .arg(home)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        let serve = Serve { child, pid, home: home.to_owned(), log };
        let deadline = Instant::now() + Duration::from_secs(20);
        while daemon_pid(home) != Some(pid) {
            assert!(Instant::now() < deadline, "serve did not start: {}", serve.log_text());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        serve
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Every process under the daemon now.
    pub(crate) fn tree(&self) -> Vec<Proc> {
        descendants(self.pid)
            .into_iter()
            .filter_map(|p| Some((p, proc_stat(p)?.start_ticks)))
            .collect()
    }

    pub(crate) fn signal(&self, signal: Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), signal).unwrap();
    }

    /// Waits for the exit (up to `limit`); returns its code and how long it took.
    pub(crate) async fn exit_within(&mut self, limit: Duration) -> (Option<i32>, Duration) {
        let start = Instant::now();
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(status) => (status.unwrap().code(), start.elapsed()),
            Err(_) => panic!(
                "serve did not exit within {} s; still running: {:?}\n{}",
                limit.as_secs(),
                self.tree(),
                self.log_text()
            ),
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // A failed test leaves nothing running.
        for p in descendants(self.pid) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p as i32), Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

fn daemon_pid(home: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(home.join("daemon.json")).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    u32::try_from(v["pid"].as_u64()?).ok()
}

/// The processes of `procs` still running after up to 2 s (killed ones may take a moment).
async fn survivors(procs: &[Proc]) -> Vec<(Proc, String)> {
    let alive = |p: &&Proc| proc_stat(p.0).is_some_and(|s| !s.zombie && s.start_ticks == p.1);
    for _ in 0..100 {
        if !procs.iter().any(|p| alive(&p)) {
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    procs.iter().filter(alive).map(|p| (*p, cmdline(p.0))).collect()
}

pub(crate) fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " ").trim().to_owned())
        .unwrap_or_default()
}

/// Polls the transcript (up to `secs`) until `ready` holds.
pub(crate) async fn until(home: &Path, session: &str, secs: u64, ready: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let events = transcript(home, session);
        if ready(&events) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out; transcript: {events:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn has(events: &[Value], kind: &str) -> bool {
    events.iter().any(|e| e["kind"]["type"] == kind)
}

/// A git repository with one commit under `dir`.
pub(crate) fn repo(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "init"]);
    root
}

/// Adds `root` as a project and starts a session through the CLI; returns the session id.
pub(crate) async fn new_session(
    home: &Path,
    env: &[(String, String)],
    root: &Path,
    agent: &str,
    mode: Option<&str>,
    prompt: &str,
) -> String {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (code, project, err) =
        cli_env(home, &["project", "add", root.to_str().unwrap()], &env).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim().to_owned();
    let mut args = vec!["session", "new", "--project", &project, "--agent", agent];
    if let Some(mode) = mode {
        args.extend(["--permission-mode", mode]);
    }
    args.push(prompt);
    let (code, out, err) = cli_env(home, &args, &env).await;
    assert_eq!(code, 0, "{err}");
    out.split_whitespace().next().unwrap().to_owned()
}

/// SIGTERM; then: the daemon exits (code 0) within the bound, none of `agents` survives,
/// `daemon.json` is gone, the home's lock is free, and the transcript ends with the host's
/// interrupt and `runFinished` (`stopped`), pending approvals voided before it.
async fn sigterm_stops(serve: &mut Serve, session: &str, agents: &[Proc]) -> Duration {
    serve.signal(Signal::SIGTERM);
    let (code, took) = serve.exit_within(STOP_BOUND + Duration::from_secs(5)).await;
    assert!(took <= STOP_BOUND, "the stop took {took:?}\n{}", serve.log_text());
    assert_eq!(code, Some(0), "{}", serve.log_text());
    assert_eq!(survivors(agents).await, vec![], "agent processes outlived the daemon");
    assert!(!serve.home.join("daemon.json").exists(), "daemon.json left behind");

    let events = transcript(&serve.home, session);
    let tail: Vec<&Value> = events.iter().rev().take(8).collect();
    let finished = events.iter().rposition(|e| e["kind"]["type"] == "runFinished");
    let interrupt = events.iter().rposition(|e| e["kind"]["type"] == "interruptRequested");
    let (Some(finished), Some(interrupt)) = (finished, interrupt) else {
        panic!("no runFinished after a host interrupt: {tail:#?}")
    };
    assert!(interrupt < finished, "{tail:#?}");
    assert_eq!(events[interrupt]["kind"]["by"], "host:stopping");
    assert_eq!(events[finished]["kind"]["outcome"], "stopped", "{tail:#?}");
    let asked = events.iter().filter(|e| e["kind"]["type"] == "approvalRequested").count();
    let answered = events[..finished].iter().filter(|e| e["kind"]["type"] == "approvalResolved");
    assert_eq!(answered.count(), asked, "every approval voided before the end: {tail:#?}");
    let last_status = events.iter().rev().find(|e| e["kind"]["type"] == "statusChanged").unwrap();
    assert_eq!(last_status["kind"]["status"], "finished");
    let lock = std::fs::read_to_string(serve.home.join("host.lock"));
    assert_eq!(lock.ok().as_deref(), Some(""), "the lock file names nobody any more");
    took
}

/// A daemon with one Codex session brought to `ready`; SIGTERM stops it. Returns the setup, the
/// home and the session for more.
async fn codex_session_stops(
    script: Script,
    prompt: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> (CodexSetup, PathBuf, String) {
    let s = codex_setup(script).await;
    let home = s.dir.path().join("nucleic-home");
    let root = repo(s.dir.path());
    let mut serve = Serve::start(&home, &s.env).await;
    let session = new_session(&home, &s.env, &root, "codex", None, prompt).await;
    until(&home, &session, 60, ready).await;
    let agents = serve.tree();
    let codex = agents.iter().filter(|p| cmdline(p.0).contains("codex app-server")).count();
    // The npm entry is a Node wrapper: the native binary runs under it.
    assert!(codex >= 2, "expected the wrapper and the native codex: {agents:?}");
    let took = sigterm_stops(&mut serve, &session, &agents).await;
    eprintln!("codex session stopped in {took:?}");
    (s, home, session)
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_daemon_with_an_idle_codex_session() {
    if isolated!("sigterm_stops_the_daemon_with_an_idle_codex_session") {
        return;
    }
    let within = Duration::from_secs(120);
    tokio::time::timeout(within, async {
        // The turn completed; the app-server waits for the next prompt.
        let turns = |n: usize| {
            move |ev: &[Value]| {
                ev.iter().filter(|e| e["kind"]["type"] == "turnCompleted").count() >= n
            }
        };
        let (s, home, session) =
            codex_session_stops(Script::text("hello"), "just say hello", turns(1)).await;

        // The next host starts clean on the home (nothing to recover) and resumes the thread.
        let mut serve = Serve::start(&home, &s.env).await;
        assert!(!serve.log_text().contains("recovered"), "{}", serve.log_text());
        s.mock.set_script(Script::text("hello again"));
        let env: Vec<(&str, &str)> = s.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (code, _, err) = cli_env(&home, &["session", "send", &session, "again"], &env).await;
        assert_eq!(code, 0, "{err}");
        until(&home, &session, 60, turns(2)).await;
        let events = transcript(&home, &session);
        let threads: Vec<&Value> = events
            .iter()
            .filter(|e| e["kind"]["type"] == "sessionStarted")
            .map(|e| &e["kind"]["backendSessionID"])
            .collect();
        assert_eq!(threads.len(), 2, "{events:#?}");
        assert_eq!(threads[0], threads[1], "the same Codex thread, resumed");
        let agents = serve.tree();
        sigterm_stops(&mut serve, &session, &agents).await;
    })
    .await
    .expect("the test's own deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_daemon_with_a_codex_session_mid_turn() {
    if isolated!("sigterm_stops_the_daemon_with_a_codex_session_mid_turn") {
        return;
    }
    let within = Duration::from_secs(120);
    tokio::time::timeout(within, async {
        // The reply streams one piece every 5 s: the turn is running when the signal comes.
        let script = Script::text("a slow answer in many small pieces")
            .with_chunk_delay(Duration::from_secs(5));
        codex_session_stops(script, "talk slowly", |ev| {
            ev.iter().any(|e| e["nativeType"] == "turn/started") && !has(ev, "turnCompleted")
        })
        .await;
    })
    .await
    .expect("the test's own deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_daemon_with_a_codex_session_awaiting_approval() {
    if isolated!("sigterm_stops_the_daemon_with_a_codex_session_awaiting_approval") {
        return;
    }
    let within = Duration::from_secs(120);
    tokio::time::timeout(within, async {
        codex_session_stops(Script::shell_then_done("touch created.txt"), "touch it", |ev| {
            has(ev, "approvalRequested")
        })
        .await;
    })
    .await
    .expect("the test's own deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_sigterm_stops_the_daemon_with_a_session_awaiting_approval() {
    if isolated!("real_claude_sigterm_stops_the_daemon_with_a_session_awaiting_approval") {
        return;
    }
    let within = Duration::from_secs(120);
    tokio::time::timeout(within, async {
        use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};
        let dir = tempfile::tempdir().unwrap();
        let mock =
            MockAnthropic::start(Script::bash_then_done("echo hi > notes.txt")).await.unwrap();
        let mut env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
        // The daemon finds the pinned CLI in its install cache (HOME is a throwaway).
        let cache = real_claude().ancestors().nth(4).unwrap().to_string_lossy().into_owned();
        env.push(("NUCLEIC_AGENT_CACHE".into(), cache));
        let home = dir.path().join("nucleic-home");
        let root = repo(dir.path());
        let mut serve = Serve::start(&home, &env).await;
        let session = new_session(&home, &env, &root, "claude", None, "write notes").await;
        until(&home, &session, 60, |ev| has(ev, "approvalRequested")).await;
        let agents = serve.tree();
        assert!(agents.iter().any(|p| cmdline(p.0).contains("claude")), "{agents:?}");
        let took = sigterm_stops(&mut serve, &session, &agents).await;
        eprintln!("claude session stopped in {took:?}");
    })
    .await
    .expect("the test's own deadline");
}

/// A daemon whose simulated session runs a command that ignores SIGTERM (the sim itself exits
/// on it, the command is left behind, no longer under the agent).
async fn sim_with_stubborn_command(dir: &Path) -> (Serve, String, Vec<Proc>) {
    let home = dir.join("home");
    let root = repo(dir);
    let serve = Serve::start(&home, &[]).await;
    // `exec`: the shell is replaced by a process that never notices its output pipe breaking.
    let prompt = "run trap '' TERM; exec sleep 300";
    let session = new_session(&home, &[], &root, "sim", Some("bypassPermissions"), prompt).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let agents = loop {
        let tree = serve.tree();
        if tree.iter().any(|p| cmdline(p.0) == "sleep 300") {
            break tree;
        }
        assert!(Instant::now() < deadline, "the command did not start: {tree:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    (serve, session, agents)
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_a_sim_session_and_the_command_that_ignores_it() {
    let within = Duration::from_secs(60);
    tokio::time::timeout(within, async {
        let dir = tempfile::tempdir().unwrap();
        let (mut serve, session, agents) = sim_with_stubborn_command(dir.path()).await;
        let took = sigterm_stops(&mut serve, &session, &agents).await;
        // The command ignored SIGTERM: it was killed after the grace period.
        assert!(took >= Duration::from_secs(2), "{took:?}");
    })
    .await
    .expect("the test's own deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_sigterm_forces_the_exit_at_once() {
    let within = Duration::from_secs(60);
    tokio::time::timeout(within, async {
        let dir = tempfile::tempdir().unwrap();
        let (mut serve, _, agents) = sim_with_stubborn_command(dir.path()).await;
        serve.signal(Signal::SIGTERM);
        // The graceful stop now waits out the command's grace period (3 s) …
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(serve.child.try_wait().unwrap().is_none(), "{}", serve.log_text());
        // … which a second signal cuts short.
        serve.signal(Signal::SIGTERM);
        let (code, took) = serve.exit_within(Duration::from_secs(5)).await;
        assert!(took < Duration::from_secs(1), "{took:?}");
        eprintln!("forced exit {took:?} after the second signal");
        assert_eq!(code, Some(143), "{}", serve.log_text());
        assert_eq!(survivors(&agents).await, vec![], "agent processes outlived the daemon");
        assert!(!serve.home.join("daemon.json").exists());
        assert!(
            serve.log_text().contains("a second SIGTERM: stopping now"),
            "{}",
            serve.log_text()
        );
    })
    .await
    .expect("the test's own deadline");
}

/// `nucleic serve` processes running on `home`.
fn hosts_on(home: &Path) -> Vec<u32> {
    let home = home.to_string_lossy();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let line = cmdline(*p);
            line.contains(" serve ") && line.contains(home.as_ref())
        })
        .collect()
}

/// Kills every host on the home when dropped (a failing test must not leave a second one).
struct NoHostLeft(PathBuf);

impl Drop for NoHostLeft {
    fn drop(&mut self) {
        for pid in hosts_on(&self.0) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// Runs `nucleic <args>` (up to 10 s; killed past it); returns its code and stderr.
async fn nucleic_within_10s(args: &[&str], home: &Path) -> (Option<i32>, String) {
    let child = tokio::process::Command::new(nucleic())
        .args(args)
        .arg(home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("nucleic {args:?} was not refused within 10 s"))
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_host_on_a_locked_home_refuses_naming_the_first() {
    let within = Duration::from_secs(60);
    tokio::time::timeout(within, async {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let serve = Serve::start(&home, &[]).await;
        let _cleanup = NoHostLeft(home.clone());
        let started = Instant::now();
        let (code, err) =
            nucleic_within_10s(&["serve", "--bind", "127.0.0.1:0", "--home"], &home).await;
        assert!(started.elapsed() < Duration::from_secs(5), "refused at once");
        assert_eq!(code, Some(2), "{err}");
        let expected = format!("another nucleic host (pid {}) is running on", serve.pid);
        assert!(err.contains(&expected), "{err}");
        // So does a demo on that home; and the first host is untouched.
        let (code, err) = nucleic_within_10s(&["demo", "--no-sessions", "--home"], &home).await;
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(&expected), "{err}");
        assert_eq!(daemon_pid(&home), Some(serve.pid));
        assert_eq!(hosts_on(&home), vec![serve.pid]);
    })
    .await
    .expect("the test's own deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_waits_for_a_live_host_whose_daemon_json_is_missing() {
    let within = Duration::from_secs(90);
    tokio::time::timeout(within, async {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let serve = Serve::start(&home, &[]).await;
        let _cleanup = NoHostLeft(home.clone());
        // The host is alive but does not advertise itself (as while it starts or stops).
        let hidden = dir.path().join("daemon.json.hidden");
        std::fs::rename(home.join("daemon.json"), &hidden).unwrap();

        // A CLI gives up after its wait, naming the host, and starts no second one.
        let started = Instant::now();
        let (code, _, err) = cli_env(&home, &["project", "list"], &[]).await;
        assert_eq!(code, 2, "{err}");
        let expected = format!("a nucleic host (pid {}) holds", serve.pid);
        assert!(err.contains(&expected), "{err}");
        assert!(started.elapsed() >= Duration::from_secs(14), "{:?}", started.elapsed());
        assert_eq!(hosts_on(&home), vec![serve.pid]);

        // Another one waits, and is served by that host as soon as it advertises itself.
        let home2 = home.clone();
        let waiting = tokio::spawn(async move { cli_env(&home2, &["project", "list"], &[]).await });
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!waiting.is_finished(), "the CLI should still be waiting");
        assert_eq!(hosts_on(&home), vec![serve.pid]);
        std::fs::rename(&hidden, home.join("daemon.json")).unwrap();
        let (code, _, err) =
            tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap().unwrap();
        assert_eq!(code, 0, "{err}");
        assert_eq!(hosts_on(&home), vec![serve.pid]);
        assert_eq!(daemon_pid(&home), Some(serve.pid), "the CLI left daemon.json alone");
    })
    .await
    .expect("the test's own deadline");
}
