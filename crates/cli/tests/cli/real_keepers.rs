//! The real `claude` and `codex` outlive a SIGKILLed daemon: each is killed once while its agent
//! waits for an approval and once while it streams text; the next daemon re-adopts the same
//! agent processes, asks the approval again (the pre-crash id is refused), and the turns complete
//! with a gapless transcript in which no agent output appears twice.

use std::path::Path;
use std::time::Duration;

use futures_util::SinkExt;
use nix::sys::signal::Signal;
use nucleic_agents::process::proc_stat;
use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::keepers::{read_until, subscribed};
use crate::real_codex_host::transcript;
use crate::shutdown::{Proc, Serve, cmdline, new_session, repo, until};

/// SIGKILLs the daemon and starts the next one on the same home.
async fn kill_and_restart(serve: &mut Serve, home: &Path, env: &[(String, String)]) -> Serve {
    serve.signal(Signal::SIGKILL);
    serve.exit_within(Duration::from_secs(10)).await;
    let _ = std::fs::remove_file(home.join("daemon.json"));
    Serve::start(home, env).await
}

/// The agent processes (everything under the daemon but the keeper itself), to check later
/// that the very same ones finished the turn.
/// A process seen in only one of two looks half a second apart (a `git` the agent ran, say) was
/// passing through, not part of the agent, and is left out.
fn agent_processes(serve: &Serve, program: &str) -> Vec<Proc> {
    // Nor git helpers: Codex's `git ls-remote` of its plugins repository waits on a network
    // question and ends when that is voided by the restart.
    let git = |pid: u32| {
        let line = cmdline(pid);
        let exe = line.split_whitespace().next().and_then(|a| a.rsplit('/').next());
        exe.is_some_and(|exe| exe == "git" || exe.starts_with("git-"))
    };
    let first: Vec<Proc> = serve
        .tree()
        .into_iter()
        .filter(|p| !cmdline(p.0).contains("__keeper") && !git(p.0))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let again = serve.tree();
    let tree: Vec<Proc> = first.into_iter().filter(|p| again.contains(p)).collect();
    assert!(tree.iter().any(|p| cmdline(p.0).contains(program)), "no {program} under the daemon");
    tree
}

fn still_running(procs: &[Proc]) {
    for (pid, ticks) in procs {
        let now = proc_stat(*pid);
        assert!(
            now.is_some_and(|s| !s.zombie && s.start_ticks == *ticks),
            "agent process {pid} ({}) did not survive",
            cmdline(*pid)
        );
    }
}

/// Every agent output event is written once, seqs run 1..n.
fn assert_clean_transcript(events: &[Value]) {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "seqs have a gap");
    let mut origins: Vec<&str> = events.iter().filter_map(|e| e["origin"].as_str()).collect();
    let all = origins.len();
    origins.sort_unstable();
    origins.dedup();
    assert_eq!(origins.len(), all, "an event of the agent's output was written twice");
}

/// The approval pending in `session` when its daemon was killed is asked again under a new id;
/// answering the old id is refused, the new one is accepted.
async fn answer_the_reasked_approval(home: &Path, session: &str, old: &str) {
    let mut socket = subscribed(home, session).await;
    let mut events = Vec::new();
    let prefix = format!("{old}@");
    read_until(&mut socket, "the approval asked again", &mut events, |e| {
        e["kind"]["type"] == "approvalRequested"
            && e["kind"]["requestID"].as_str().is_some_and(|id| id.starts_with(&prefix))
    })
    .await;
    let new = events.last().unwrap()["kind"]["requestID"].as_str().unwrap().to_owned();
    for (message, request, ok) in [("old", old, false), ("new", new.as_str(), true)] {
        let decide = json!({"type": "decide", "messageID": message, "sessionID": session, "requestID": request, "decision": {"type": "allow"}});
        socket.send(Message::Text(decide.to_string().into())).await.unwrap();
        let reply = read_until(&mut socket, "the decision's reply", &mut events, |f| {
            f["messageID"] == message
        })
        .await;
        if ok {
            assert_eq!(reply["type"], "ack", "{reply}");
        } else {
            assert_eq!(reply["code"], "alreadyResolved", "{reply}");
        }
    }
    let asked = events.iter().filter(|e| asks_a_tool(e)).count();
    assert_eq!(asked, 2, "asked once before the crash and once again: {events:#?}");
}

/// What the mock streams slowly in the second turn.
const ANSWER: &str = "a slow answer in many small pieces that keeps streaming for a while";

/// Sends a follow-up whose `answer` streams slowly, SIGKILLs the daemon mid-stream, starts the
/// next: the same `agents` finish the turn, the answer arrives whole, the transcript is clean.
/// Returns the new daemon and the transcript.
async fn kill_mid_stream(
    serve: &mut Serve,
    home: &Path,
    env: &[(String, String)],
    session: &str,
    agents: &[Proc],
    answer: &str,
) -> (Serve, Vec<Value>) {
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (code, _, err) =
        crate::daemon::cli_env(home, &["session", "send", session, "talk slowly"], &env_refs).await;
    assert_eq!(code, 0, "{err}");
    let streaming = |ev: &[Value]| {
        let partials = ev
            .iter()
            .filter(|e| e["kind"]["type"] == "assistantText" && e["kind"]["isPartial"] == true);
        partials.count() >= 2
    };
    until(home, session, 60, streaming).await;
    assert_eq!(turns(&transcript(home, session)), 1, "killed before the answer ended");
    let next = kill_and_restart(serve, home, env).await;
    until(home, session, 60, |ev| turns(ev) >= 2).await;
    still_running(agents);
    let events = transcript(home, session);
    assert_clean_transcript(&events);
    let full = events.iter().any(|e| {
        e["kind"]["type"] == "assistantText"
            && e["kind"]["isPartial"] == false
            && e["kind"]["text"] == answer
    });
    assert!(full, "the streamed answer arrived whole after the restart");
    (next, events)
}

fn turns(events: &[Value]) -> usize {
    events.iter().filter(|e| e["kind"]["type"] == "turnCompleted").count()
}

/// Whether `e` asks a tool call (not the host's network question: Codex checks github.com at
/// start, and that question is voided by a restart, not asked again).
fn asks_a_tool(e: &Value) -> bool {
    e["kind"]["type"] == "approvalRequested"
        && e["kind"]["toolName"] != nucleic_protocol::EGRESS_APPROVAL
}

fn pending_request(events: &[Value]) -> String {
    let asked = events.iter().rev().find(|e| asks_a_tool(e)).unwrap();
    asked["kind"]["requestID"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_outlives_a_sigkilled_daemon_at_an_approval_and_mid_stream() {
    if isolated!("real_claude_outlives_a_sigkilled_daemon_at_an_approval_and_mid_stream") {
        return;
    }
    tokio::time::timeout(Duration::from_secs(150), async {
        use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};
        let dir = tempfile::tempdir().unwrap();
        let mock =
            MockAnthropic::start(Script::bash_then_done("echo kept > notes.txt")).await.unwrap();
        let mut env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
        let cache = real_claude().ancestors().nth(4).unwrap().to_string_lossy().into_owned();
        env.push(("NUCLEIC_AGENT_CACHE".into(), cache));
        let home = dir.path().join("nucleic-home");
        crate::support::ask_for_everything(&home);
        let root = repo(dir.path());
        let mut serve = Serve::start(&home, &env).await;
        let session = new_session(&home, &env, &root, "claude", None, "write notes").await;

        // Killed while the agent waits for an approval.
        until(&home, &session, 60, |ev| ev.iter().any(asks_a_tool)).await;
        let agents = agent_processes(&serve, "claude");
        let old = pending_request(&transcript(&home, &session));
        let mut serve = kill_and_restart(&mut serve, &home, &env).await;
        answer_the_reasked_approval(&home, &session, &old).await;
        until(&home, &session, 60, |ev| turns(ev) >= 1).await;
        still_running(&agents);
        let worktree =
            transcript(&home, &session)[0]["kind"]["worktree"]["path"].as_str().unwrap().to_owned();
        assert_eq!(
            std::fs::read_to_string(Path::new(&worktree).join("notes.txt")).unwrap(),
            "kept\n"
        );

        // Killed while the agent streams its answer.
        mock.set_script(Script::text(ANSWER).with_chunk_delay(Duration::from_millis(150)));
        let (_serve, events) =
            kill_mid_stream(&mut serve, &home, &env, &session, &agents, ANSWER).await;
        // Claude reports `system/init` at every turn: one conversation throughout.
        let mut conversations: Vec<&Value> = events
            .iter()
            .filter(|e| e["kind"]["type"] == "sessionStarted")
            .map(|e| &e["kind"]["backendSessionID"])
            .collect();
        conversations.dedup();
        assert_eq!(conversations.len(), 1, "one claude conversation: {conversations:?}");
    })
    .await
    .expect("the test's own deadline");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_outlives_a_sigkilled_daemon_at_an_approval_and_mid_stream() {
    if isolated!("real_codex_outlives_a_sigkilled_daemon_at_an_approval_and_mid_stream") {
        return;
    }
    tokio::time::timeout(Duration::from_secs(150), async {
        use nucleic_testkit::mock_openai::Script;
        let s = crate::real_codex::codex_setup(Script::shell_then_done("touch created.txt")).await;
        let home = s.dir.path().join("nucleic-home");
        crate::support::ask_for_everything(&home);
        let root = repo(s.dir.path());
        let mut serve = Serve::start(&home, &s.env).await;
        let session = new_session(&home, &s.env, &root, "codex", None, "make a file").await;

        until(&home, &session, 60, |ev| ev.iter().any(asks_a_tool)).await;
        let agents = agent_processes(&serve, "codex app-server");
        let old = pending_request(&transcript(&home, &session));
        let mut serve = kill_and_restart(&mut serve, &home, &s.env).await;
        answer_the_reasked_approval(&home, &session, &old).await;
        until(&home, &session, 60, |ev| turns(ev) >= 1).await;
        still_running(&agents);

        s.mock.set_script(Script::text(ANSWER).with_chunk_delay(Duration::from_millis(150)));
        let (_serve, events) =
            kill_mid_stream(&mut serve, &home, &s.env, &session, &agents, ANSWER).await;
        let started = events.iter().filter(|e| e["kind"]["type"] == "sessionStarted").count();
        assert_eq!(started, 1, "one codex process served both turns");
    })
    .await
    .expect("the test's own deadline");
}
