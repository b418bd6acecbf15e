//! Sessions made outside Nucleic, through the host: listed for their project only, and what
//! adopting refuses — an unknown id, a Codex session (not adoptable yet) — with nothing created
//! and the CLI's own files unread beyond discovery and never written.

use std::path::Path;

use nucleic_host::AdoptOutside;
use nucleic_protocol::Backend;

use crate::support::{config, repo};

/// A Claude Code transcript of `cwd` under `home`'s `.claude/projects`, as the CLI writes it.
fn claude_session(home: &Path, cwd: &Path, id: &str, prompt: &str) -> std::path::PathBuf {
    let slug: String = cwd
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = home.join(".claude/projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap();
    let line = serde_json::json!({
        "type": "user", "sessionId": id, "cwd": cwd, "version": "2.1.332",
        "timestamp": "2026-12-07T06:00:00.000Z", "uuid": "u1", "parentUuid": null,
        "message": {"role": "user", "content": [{"type": "text", "text": prompt}]}
    });
    let file = dir.join(format!("{id}.jsonl"));
    std::fs::write(&file, format!("{line}\n")).unwrap();
    file
}

/// A Codex rollout of `cwd` under `codex_home`.
fn codex_rollout(codex_home: &Path, cwd: &Path, id: &str) -> std::path::PathBuf {
    let dir = codex_home.join("sessions/2026/12/07");
    std::fs::create_dir_all(&dir).unwrap();
    let meta = serde_json::json!({
        "timestamp": "2026-12-07T06:00:00.000Z", "type": "session_meta",
        "payload": {"id": id, "cwd": cwd, "cli_version": "0.171.0", "timestamp": "2026-12-07T06:00:00.000Z"}
    });
    let file = dir.join(format!("rollout-2026-12-07T06-00-00-{id}.jsonl"));
    std::fs::write(&file, format!("{meta}\n")).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread")]
async fn outside_sessions_are_listed_per_project_and_adoption_refuses_what_it_cannot_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let person = dir.path().join("person");
    let (mine, other) = (repo(&dir.path().join("mine")), repo(&dir.path().join("other")));
    let (mine, other) = (mine.canonicalize().unwrap(), other.canonicalize().unwrap());
    let claude =
        claude_session(&person, &mine, "c1a2b3c4-0000-4000-8000-000000000001", "fix the bug");
    claude_session(&person, &other, "c1a2b3c4-0000-4000-8000-000000000002", "elsewhere");
    let codex =
        codex_rollout(&person.join(".codex"), &mine, "01a228e0-1b31-7133-b3e9-877fba264cc4");
    let before = (std::fs::read(&claude).unwrap(), std::fs::read(&codex).unwrap());
    let mut config = config(dir.path());
    config.agent_env = vec![("HOME".into(), person.clone().into_os_string())];
    let host = nucleic_host::Host::open(config).await.unwrap();
    let project = host.add_project(mine.to_str().unwrap(), None, |_| {}).await.unwrap();

    let found = host.outside_sessions(&project.project_id).await.unwrap();
    let listed: Vec<(Backend, &str)> =
        found.sessions.iter().map(|s| (s.backend, s.id.as_str())).collect();
    assert_eq!(listed.len(), 2, "only this project's two: {found:#?}");
    assert!(listed.contains(&(Backend::ClaudeCode, "c1a2b3c4-0000-4000-8000-000000000001")));
    assert!(listed.contains(&(Backend::Codex, "01a228e0-1b31-7133-b3e9-877fba264cc4")));

    let adopt = |session: &str| AdoptOutside {
        project_id: project.project_id.clone(),
        session: session.into(),
        prompt: "go on".into(),
        mode: None,
    };
    let unknown = host.adopt_outside(adopt("no-such-session"), "test").await.unwrap_err();
    assert!(unknown.to_string().contains("no session no-such-session"), "{unknown}");
    assert!(unknown.to_string().contains("nucleic project sessions"), "{unknown}");
    let codex_refused = host
        .adopt_outside(adopt("01a228e0-1b31-7133-b3e9-877fba264cc4"), "test")
        .await
        .unwrap_err();
    assert!(codex_refused.to_string().contains("not supported yet"), "{codex_refused}");
    // Nothing was created, and the CLIs' files are as they were.
    assert!(host.list_sessions(None, false).await.unwrap().is_empty());
    assert_eq!((std::fs::read(&claude).unwrap(), std::fs::read(&codex).unwrap()), before);
}
