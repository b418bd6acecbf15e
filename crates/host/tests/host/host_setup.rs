//! Setting up a host for tests: its configuration on a temporary home with a given executable
//! for the hidden entry points, and answering a session's approvals. Shared with the CLI's
//! tests (`crates/cli/tests/cli/host_support.rs` includes this file), which start the host with
//! the `nucleic` binary instead.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{Decision, EventKind};

/// The test host's configuration, with its home in `dir` and `nucleic` as the executable it
/// starts as `nucleic __sim-agent`, `__keeper`, `__confine`.
pub fn config_with(dir: &Path, nucleic: PathBuf) -> HostConfig {
    HostConfig {
        home: dir.join("home"),
        agents: AgentPaths {
            claude: None,
            codex: None,
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: nucleic.clone(),
            sim_prefix: vec![nucleic_agents::entry_points::SIM_AGENT_ENTRY.into()],
            nucleic,
        },
        limits: Limits { max_live_sessions: 10, max_worktrees: 10, min_free_bytes: 0 },
        approval_timeout: None,
        setup_timeout: Duration::from_secs(2),
        agent_env: Vec::new(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: None,
        policy: false,
    }
}

/// Allows every approval until the session's turn is over.
pub async fn approve_until_turn_done(host: &Host, id: &str) {
    let mut events = host.subscribe(id, 1).await.unwrap();
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), events.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match &e.kind {
            EventKind::ApprovalRequested(a) => {
                host.decide(id, &a.request_id, Decision::Allow, "test").await.unwrap();
            }
            EventKind::TurnCompleted(_) => break,
            _ => {}
        }
    }
}
