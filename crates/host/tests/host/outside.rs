//! Sessions made outside Nucleic, through the host: listed for their project only, and what
//! adopting refuses — an unknown id, a session whose CLI is not installed — with nothing created
//! and the CLI's own files unread beyond discovery and never written.

use nucleic_host::AdoptOutside;
use nucleic_protocol::Backend;

use nucleic_testkit::outside_sessions::{plant_claude_session, plant_codex_rollout};

use crate::support::{config, repo};

#[tokio::test(flavor = "multi_thread")]
async fn outside_sessions_are_listed_per_project_and_adoption_refuses_what_it_cannot_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let person = dir.path().join("person");
    let (mine, other) = (repo(&dir.path().join("mine")), repo(&dir.path().join("other")));
    let (mine, other) = (mine.canonicalize().unwrap(), other.canonicalize().unwrap());
    let claude = plant_claude_session(
        &person.join(".claude"),
        &mine,
        "c1a2b3c4-0000-4000-8000-000000000001",
        "fix the bug",
    );
    plant_claude_session(
        &person.join(".claude"),
        &other,
        "c1a2b3c4-0000-4000-8000-000000000002",
        "elsewhere",
    );
    let codex =
        plant_codex_rollout(&person.join(".codex"), &mine, "01a228e0-1b31-7133-b3e9-877fba264cc4");
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
        in_place: false,
    };
    let unknown = host.adopt_outside(adopt("no-such-session"), "test").await.unwrap_err();
    assert!(unknown.to_string().contains("no session no-such-session"), "{unknown}");
    assert!(unknown.to_string().contains("nucleic project sessions"), "{unknown}");
    let codex_refused = host
        .adopt_outside(adopt("01a228e0-1b31-7133-b3e9-877fba264cc4"), "test")
        .await
        .unwrap_err();
    // Codex can be adopted (app-server's thread/fork), but not where it is not installed: refused
    // before a worktree or a session exists.
    assert!(codex_refused.to_string().contains("codex is not installed"), "{codex_refused}");
    // Nothing was created, and the CLIs' files are as they were.
    assert!(host.list_sessions(None, false).await.unwrap().is_empty());
    assert_eq!((std::fs::read(&claude).unwrap(), std::fs::read(&codex).unwrap()), before);
}
