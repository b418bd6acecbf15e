//! The host with an agent that attacks git from its worktree: its own commands plant a
//! fsmonitor, a hooks dir and a filter in the project's repository config, and its file edits
//! (no approval under `acceptEdits`) point its `.git` at another repository. Nothing planted
//! runs when the host reads git facts or merges, and the other repository is never touched.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nucleic_protocol::FinishAction;

use crate::support::{approve_until_turn_done, git, new_session, repo};

/// A script that records that it ran (its name) in `fired`, then passes stdin through.
fn trap(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let fired = dir.join("fired");
    std::fs::write(&path, format!("#!/bin/sh\necho {name} >> '{}'\ncat\n", fired.display()))
        .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_owned()
}

fn fired(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("fired")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_planting_git_config_and_rewriting_its_gitlink_runs_nothing_in_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let traps = dir.path().join("traps");
    let hooks = traps.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in ["post-checkout", "post-commit", "reference-transaction", "post-merge"] {
        trap(&hooks, hook);
    }
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    git(&other, &["init", "-q", "-b", "main"]);
    git(&other, &["commit", "-q", "--allow-empty", "-m", "other"]);
    git(&other, &["config", "core.fsmonitor", &trap(&traps, "other-fsmonitor")]);
    let other_head = git(&other, &["rev-parse", "HEAD"]);

    // Confined, the agent cannot write `.git/config` at all (`confinement.rs`). The host's own
    // defences are tested as if it got through: an agent of a host that runs them unconfined.
    let mut config = crate::support::config(dir.path());
    config.agent_isolation = nucleic_host::AgentIsolation::Off;
    let host = nucleic_host::Host::open(config).await.unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let fsmonitor = trap(&traps, "fsmonitor");
    let clean = trap(&traps, "filter-clean");
    let prompt = format!(
        "run git config core.fsmonitor {fsmonitor} then run git config core.hooksPath {} \
         then run git config filter.evil.clean {clean} \
         then write .gitattributes containing * filter=evil \
         then write .git containing gitdir: {}/.git",
        hooks.display(),
        other.display()
    );
    let mut request = new_session(&project.project_id, &prompt);
    request.permission_mode = Some("acceptEdits".into());
    let session = host.new_session(request, "test").await.unwrap();
    let id = session.session_id;
    approve_until_turn_done(&host, &id).await;
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    assert!(config.contains(&fsmonitor) && config.contains(&clean), "planted: {config}");
    let gitlink = host.session_summary(&id).await.unwrap();
    let worktree = gitlink.worktree.unwrap().path;
    let link = std::fs::read_to_string(Path::new(&worktree).join(".git")).unwrap();
    assert!(link.contains("other"), "the agent rewrote its gitlink: {link}");
    let _ = std::fs::remove_file(traps.join("fired"));

    let facts = host.git_facts(&id, true).await;
    assert_eq!(fired(&traps), "", "planted programs ran while reading git facts");
    let facts = facts.unwrap();
    let paths: Vec<_> = facts.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, [".gitattributes"], "the session's own diff: {facts:?}");

    let finish = FinishAction::Merge {
        message: Some("merge".into()),
        update_checkout: true,
        force_reason: None,
    };
    let merged = host.finish(&id, finish, "test").await;
    assert_eq!(fired(&traps), "", "planted programs ran while merging");
    merged.unwrap();
    assert_eq!(git(&root, &["cat-file", "-p", "main:.gitattributes"]), "* filter=evil\n");
    assert_eq!(git(&other, &["rev-parse", "HEAD"]), other_head, "the other repository moved");
}
