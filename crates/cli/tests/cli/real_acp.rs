//! `nucleic acp --agent claude` and `--agent codex`: the real pinned `claude` and `codex`
//! (against the mock Anthropic and Responses servers, offline, in a loopback-only namespace) as
//! the Nucleic session behind an editor's thread, driven by the official ACP TypeScript client. The policy's modes are offered and switched
//! with `session/set_mode` (each switch seen as `current_mode_update`), the agent's command is
//! asked in the editor and allowed there, and it runs in the session's worktree.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nucleic_testkit::agents::{claude_offline_env, real_claude};
use nucleic_testkit::isolated;
use nucleic_testkit::mock_anthropic::{MockAnthropic, Script};
use nucleic_testkit::mock_openai::Script as OpenAiScript;

use crate::acp::{host_client, peer_with};
use crate::daemon::cli_env;
use crate::shutdown::{Serve, repo};
use crate::support::{ask_for_everything, nucleic};

/// The editor's scenario against a daemon of `home` running `agent` with `env`.
async fn editor_over(agent: &str, home: &Path, root: &Path, env: &[(String, String)]) {
    let _serve = Serve::start(home, env).await;
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (code, _, err) =
        cli_env(home, &["project", "add", root.to_str().unwrap()], &env_refs).await;
    assert_eq!(code, 0, "{err}");

    let (bin, home_s, cwd) = (nucleic(), home.to_str().unwrap(), root.to_str().unwrap());
    let args = ["modes", bin.to_str().unwrap(), home_s, cwd];
    let report = peer_with(&args, &[("NUCLEIC_ACP_AGENT", agent)]).await;
    eprintln!("editor over real {agent}: {report}");

    // A session with a policy offers its three modes, the project's default current.
    assert_eq!(report["modes"]["currentModeId"], "edit", "{report}");
    let ids: Vec<&str> = report["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["readonly", "edit", "full"]);
    let switches: Vec<&str> = report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["kind"] == "current_mode_update")
        .filter_map(|u| u["mode"].as_str())
        .collect();
    assert_eq!(switches, ["readonly", "edit"], "{report}");

    // The command was asked in the editor, allowed there, and ran in the worktree.
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert_eq!(asked[0]["toolCall"]["kind"], "execute", "{report}");
    assert!(asked[0]["toolCall"]["title"].as_str().unwrap().contains("touch via-acp"), "{report}");
    assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report}");
    let id = report["sessionId"].as_str().unwrap();
    let summary = host_client(home).await.session(id).await.unwrap();
    assert_eq!(summary.mode.as_deref(), Some("edit"));
    let worktree = PathBuf::from(&summary.worktree.as_ref().unwrap().path);
    assert!(worktree.join("via-acp").exists(), "the allowed command did not run");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_in_an_editor_switches_modes_and_its_approval_is_answered_there() {
    if isolated!("real_claude_in_an_editor_switches_modes_and_its_approval_is_answered_there") {
        return;
    }
    tokio::time::timeout(Duration::from_secs(170), async {
        let dir = tempfile::tempdir().unwrap();
        let mock = MockAnthropic::start(Script::bash_then_done("touch via-acp")).await.unwrap();
        let mut env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
        let cache = real_claude().ancestors().nth(4).unwrap().to_string_lossy().into_owned();
        env.push(("NUCLEIC_AGENT_CACHE".into(), cache));
        let home = dir.path().join("nucleic-home");
        ask_for_everything(&home);
        let root = repo(dir.path());
        editor_over("claude", &home, &root, &env).await;
        assert!(mock.requests().iter().all(|q| q.path.starts_with("/v1/messages")));
    })
    .await
    .expect("the real claude ACP test finished within 170 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_codex_in_an_editor_switches_modes_and_its_approval_is_answered_there() {
    if isolated!("real_codex_in_an_editor_switches_modes_and_its_approval_is_answered_there") {
        return;
    }
    tokio::time::timeout(Duration::from_secs(170), async {
        let s =
            crate::real_codex::codex_setup(OpenAiScript::shell_then_done("touch via-acp")).await;
        let home = s.dir.path().join("nucleic-home");
        ask_for_everything(&home);
        let root = repo(s.dir.path());
        editor_over("codex", &home, &root, &s.env).await;
    })
    .await
    .expect("the real codex ACP test finished within 170 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn real_claude_in_an_editor_cannot_allow_what_the_invariants_forbid() {
    if isolated!("real_claude_in_an_editor_cannot_allow_what_the_invariants_forbid") {
        return;
    }
    tokio::time::timeout(Duration::from_secs(170), async {
        let dir = tempfile::tempdir().unwrap();
        let command = "touch critical-ran; sudo -n true";
        let mock = MockAnthropic::start(Script::bash_then_done(command)).await.unwrap();
        let mut env = claude_offline_env(&mock.base_url(), &dir.path().join("scratch"));
        let cache = real_claude().ancestors().nth(4).unwrap().to_string_lossy().into_owned();
        env.push(("NUCLEIC_AGENT_CACHE".into(), cache));
        let home = dir.path().join("nucleic-home");
        ask_for_everything(&home);
        let root = repo(dir.path());
        let _serve = Serve::start(&home, &env).await;
        let env_refs: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let add = ["project", "add", root.to_str().unwrap()];
        let (code, _, err) = cli_env(&home, &add, &env_refs).await;
        assert_eq!(code, 0, "{err}");

        let (bin, home_s, cwd) = (nucleic(), home.to_str().unwrap(), root.to_str().unwrap());
        let args = ["critical", bin.to_str().unwrap(), home_s, cwd];
        let report = peer_with(&args, &[("NUCLEIC_ACP_AGENT", "claude")]).await;
        assert_eq!(report["prompts"][0]["stopReason"], "end_turn", "{report}");
        // Critical (`sudo`): denied by the invariant at once; whatever the editor answered (if
        // it was asked before the denial) is refused as late. One resolution, nothing ran.
        for asked in report["permissions"].as_array().unwrap() {
            assert_eq!(asked["risk"], "critical", "{report}");
        }
        let id = report["sessionId"].as_str().unwrap();
        let mut host = host_client(&home).await;
        let summary = host.session(id).await.unwrap();
        let events = host.events_window(id, 1, summary.last_seq, 1000, Duration::from_secs(30));
        let resolved: Vec<nucleic_protocol::ApprovalResolved> = events
            .await
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.kind {
                nucleic_protocol::EventKind::ApprovalResolved(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        assert_eq!(resolved[0].decision, nucleic_protocol::DecisionKind::Deny);
        assert_eq!(resolved[0].by, "invariant:sudo", "{resolved:?}");
        let worktree = PathBuf::from(&summary.worktree.as_ref().unwrap().path);
        assert!(!worktree.join("critical-ran").exists(), "ran despite the invariant");
        let failed = report["updates"].as_array().unwrap().iter().any(|u| u["status"] == "failed");
        assert!(failed, "the editor never saw the call fail: {report}");
    })
    .await
    .expect("the real claude ACP test finished within 170 s");
}
