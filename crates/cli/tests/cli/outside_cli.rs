//! `nucleic project sessions` and `nucleic project adopt` through the daemon, on session files
//! planted where the CLIs keep them (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`): listed for their
//! project with what adopting them would do; what cannot be adopted is refused, saying why.

use nucleic_testkit::outside_sessions::{plant_claude_session, plant_codex_rollout};

use crate::daemon::{DaemonGuard, cli_env};

const CLAUDE_ID: &str = "c1a2b3c4-0000-4000-8000-00000000cafe";
const CODEX_ID: &str = "01a228e0-1b31-7133-b3e9-877fba26cafe";

#[tokio::test(flavor = "multi_thread")]
async fn project_sessions_lists_the_outside_ones_and_adopt_refuses_what_it_cannot_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = nucleic_testkit::git_repo::repo(dir.path());
    let (claude, codex) = (dir.path().join("claude-config"), dir.path().join("codex-home"));
    plant_claude_session(&claude, &root, CLAUDE_ID, "fix the flaky test");
    plant_codex_rollout(&codex, &root, CODEX_ID);
    let (claude, codex) = (claude.to_string_lossy(), codex.to_string_lossy());
    let env = [("CLAUDE_CONFIG_DIR", claude.as_ref()), ("CODEX_HOME", codex.as_ref())];
    let home = dir.path().join("nucleic-home");
    let _guard = DaemonGuard(home.clone());
    let (code, project, err) =
        cli_env(&home, &["project", "add", root.to_str().unwrap()], &env).await;
    assert_eq!(code, 0, "{err}");
    let project = project.trim();

    let (code, out, err) = cli_env(&home, &["project", "sessions", project], &env).await;
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let claude_line = lines.iter().find(|l| l.contains(CLAUDE_ID)).unwrap();
    assert!(claude_line.starts_with("claudeCode 2.1.332  "), "{claude_line}");
    assert!(claude_line.contains("1 turn") && claude_line.contains("\"fix the flaky test\""));
    let codex_line = lines.iter().find(|l| l.contains(CODEX_ID)).unwrap();
    // Adoptable: Codex forks through app-server's thread/fork (real_codex_adopt carries one on).
    assert!(!codex_line.contains("not adoptable"), "{codex_line}");

    let (code, json, err) = cli_env(&home, &["project", "sessions", project, "--json"], &env).await;
    assert_eq!(code, 0, "{err}");
    let found: nucleic_protocol::OutsideSessions = serde_json::from_str(&json).unwrap();
    assert_eq!(found.sessions.len(), 2);
    assert!(found.sessions.iter().any(|s| s.id == CLAUDE_ID && s.adoptable && s.live.is_none()));
    assert!(found.sessions.iter().any(|s| s.id == CODEX_ID && s.adoptable));

    // (Adopting the Codex one would start the real codex: real_codex_adopt does that, offline.)
    let (code, _, err) =
        cli_env(&home, &["project", "adopt", project, "nope", "go on"], &env).await;
    assert_ne!(code, 0);
    assert!(err.contains("no session nope"), "{err}");
    // Nothing was started.
    let (_, sessions, _) = cli_env(&home, &["session", "list"], &env).await;
    assert!(sessions.trim().is_empty(), "{sessions}");
}
