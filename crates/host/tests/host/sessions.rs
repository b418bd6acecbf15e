//! The host with the simulated agent and real git: sessions in parallel worktrees, git facts,
//! finishing (merge / squash / rebase / discard / keep / continue / handoff), and bad input.

use std::path::Path;
use std::time::Duration;

use nucleic_host::{AgentPaths, Host, HostConfig, HostError, Limits};
use nucleic_protocol::{EventKind, FinishAction, ProtocolErrorCode, SessionStatus};
use pretty_assertions::assert_eq;

use crate::support::{approve_until_turn_done, git, host, new_session, nucleic, repo};

#[tokio::test(flavor = "multi_thread")]
async fn three_sessions_in_parallel_worktrees_merge_squash_discard() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    assert_eq!(project.default_branch, "main");

    let mut ids = Vec::new();
    for (file, text) in [("a.txt", "A"), ("b.txt", "B"), ("c.txt", "C")] {
        let s = host
            .new_session(
                new_session(&project.project_id, &format!("write {file} containing {text}")),
                "test",
            )
            .await
            .unwrap();
        ids.push(s.session_id);
    }
    for id in &ids {
        approve_until_turn_done(&host, id).await;
    }
    // Each worktree holds only its own file.
    for (id, file) in ids.iter().zip(["a.txt", "b.txt", "c.txt"]) {
        let facts = host.git_facts(id, true).await.unwrap();
        assert_eq!(facts.files.len(), 1, "{facts:?}");
        assert_eq!(facts.files[0].path, file);
        assert_eq!(facts.files[0].status, "untracked");
        assert_eq!(facts.files[0].additions, 1);
        assert!(facts.patch.unwrap().contains(&format!("+++ b/{file}")));
        assert!(facts.conflicts.is_empty());
    }
    let sessions = host.list_sessions(Some(project.project_id.clone()), false).await.unwrap();
    assert_eq!(sessions.len(), 3);
    assert!(sessions.iter().all(|s| s.status == SessionStatus::AwaitingInput), "{sessions:?}");

    // `main` is checked out in the main checkout: its files change only when asked.
    let refused = host
        .finish(
            &ids[0],
            FinishAction::Merge { message: None, update_checkout: false, force_reason: None },
            "test",
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ProtocolErrorCode::GitRefused);
    assert!(refused.to_string().contains("checked out"), "{refused}");
    assert!(!root.join("a.txt").exists());
    let unchanged = host.git_facts(&ids[0], false).await.unwrap();
    assert_eq!(unchanged.files[0].status, "untracked", "the refusal committed nothing");
    host.finish(
        &ids[0],
        FinishAction::Merge {
            message: Some("merge a".into()),
            update_checkout: true,
            force_reason: None,
        },
        "test",
    )
    .await
    .unwrap();
    host.finish(
        &ids[1],
        FinishAction::Squash {
            message: Some("squash b".into()),
            update_checkout: true,
            force_reason: None,
        },
        "test",
    )
    .await
    .unwrap();
    host.finish(&ids[2], FinishAction::Discard, "test").await.unwrap();

    assert_eq!(git(&root, &["show", "main:a.txt"]), "A\n");
    assert_eq!(git(&root, &["show", "main:b.txt"]), "B\n");
    assert!(
        std::process::Command::new("git")
            .args(["cat-file", "-e", "main:c.txt"])
            .current_dir(&root)
            .status()
            .unwrap()
            .code()
            != Some(0)
    );
    let tip_parents = git(&root, &["rev-list", "--parents", "-n1", "main"]);
    assert_eq!(tip_parents.split_whitespace().count(), 2, "squash: one parent");
    let merge_parents = git(&root, &["rev-list", "--parents", "-n1", "main~1"]);
    assert_eq!(merge_parents.split_whitespace().count(), 3, "merge: two parents");
    assert_eq!(git(&root, &["status", "--porcelain"]), "", "the main checkout stays clean");
    let discarded = host.session_summary(&ids[2]).await.unwrap().worktree.unwrap();
    assert!(!Path::new(&discarded.path).exists());
    assert!(!git(&root, &["branch", "--list", &discarded.branch]).contains("nucleic/"));
}

#[tokio::test(flavor = "multi_thread")]
async fn keep_continue_handoff_and_rollback() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let first = host
        .new_session(new_session(&project.project_id, "write notes.txt containing draft"), "test")
        .await
        .unwrap();
    approve_until_turn_done(&host, &first.session_id).await;
    host.finish(&first.session_id, FinishAction::Keep, "test").await.unwrap();

    let handoff = host
        .finish(&first.session_id, FinishAction::Handoff, "test")
        .await
        .unwrap()
        .unwrap()
        .payload();
    let command = handoff["command"].as_str().unwrap();
    let path = first.worktree.as_ref().unwrap().path.clone();
    assert!(command.starts_with(&format!("cd '{path}' && claude --resume '")), "{command}");

    let next = host
        .finish(
            &first.session_id,
            FinishAction::Continue { prompt: "run cat notes.txt".into(), backend: None },
            "test",
        )
        .await
        .unwrap()
        .unwrap()
        .payload();
    let next_id = next["sessionID"].as_str().unwrap().to_owned();
    approve_until_turn_done(&host, &next_id).await;
    let next_path = host.session_summary(&next_id).await.unwrap().worktree.unwrap().path;
    assert_eq!(
        std::fs::read_to_string(Path::new(&next_path).join("notes.txt")).unwrap(),
        "draft\n"
    );
    // The kept session's branch did not move; its work is still uncommitted there.
    assert!(Path::new(&path).join("notes.txt").exists());

    let refused = host
        .finish(&first.session_id, FinishAction::Rollback { confirm: false }, "test")
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ProtocolErrorCode::GitRefused);
    host.finish(&first.session_id, FinishAction::Rollback { confirm: true }, "test").await.unwrap();
    assert!(!Path::new(&path).exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_projects_and_bases_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let not_repo = dir.path().join("plain");
    std::fs::create_dir_all(&not_repo).unwrap();
    let e = host.add_project(not_repo.to_str().unwrap(), None, |_| {}).await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::InvalidRequest, "{e}");
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let dup = host.add_project(root.join(".").to_str().unwrap(), None, |_| {}).await.unwrap_err();
    assert!(dup.to_string().contains("already"), "{dup}");

    let mut request = new_session(&project.project_id, "hi");
    request.base_ref = Some("no-such-branch".into());
    let e = host.new_session(request, "test").await.unwrap_err();
    assert!(e.to_string().contains("no-such-branch"), "{e}");
    let e = host.subscribe("nope", 1).await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::NotFound);
    // A backend that is not installed is refused before any worktree is made.
    let mut request = new_session(&project.project_id, "hi");
    request.backend = Some(nucleic_protocol::Backend::Codex);
    let e = host.new_session(request, "test").await.unwrap_err();
    assert!(e.to_string().contains("codex is not installed"), "{e}");
    let worktrees = std::fs::read_dir(root.join(".nucleic/worktrees")).map_or(0, Iterator::count);
    assert_eq!(worktrees, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_or_hanging_setup_leaves_a_clear_error_and_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let failing = host
        .add_project(root.to_str().unwrap(), None, |s| {
            s.setup_script = Some("echo installing; exit 7".into())
        })
        .await
        .unwrap();
    let s = host.new_session(new_session(&failing.project_id, "hi"), "test").await.unwrap();
    assert_eq!(s.status, SessionStatus::Error);
    let mut events = host.subscribe(&s.session_id, 1).await.unwrap();
    let mut messages = Vec::new();
    while let Some(e) = events.next().await.unwrap() {
        if let EventKind::Error(err) = &e.kind {
            messages.push(err.message.clone());
        }
    }
    assert!(messages.iter().any(|m| m.contains("setup")), "{messages:?}");
    assert!(matches!(host.send_input(&s.session_id, "hello").await, Err(HostError::Invalid(_))));

    host.remove_project(&failing.project_id).await.unwrap_err();
    host.archive(&s.session_id, true, "test").await.unwrap();
    host.remove_project(&failing.project_id).await.unwrap();
    let hanging = host
        .add_project(root.to_str().unwrap(), None, |s| s.setup_script = Some("sleep 30".into()))
        .await
        .unwrap();
    let t = std::time::Instant::now();
    let s = host.new_session(new_session(&hanging.project_id, "hi"), "test").await.unwrap();
    assert_eq!(s.status, SessionStatus::Error);
    assert!(t.elapsed() < Duration::from_secs(15), "the setup timeout (2 s) cut it off");
}

#[tokio::test(flavor = "multi_thread")]
async fn export_import_gc_and_a_worktree_deleted_behind_our_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let s = host
        .new_session(new_session(&project.project_id, "write a.txt containing A"), "test")
        .await
        .unwrap();
    approve_until_turn_done(&host, &s.session_id).await;

    let markdown =
        host.export_session(&s.session_id, nucleic_protocol::ExportFormat::Markdown).await.unwrap();
    assert!(
        markdown.contains("Nucleic session export") && markdown.contains("Raw events (JSONL)"),
        "{markdown}"
    );
    assert!(markdown.contains("write a.txt containing A"));
    let jsonl =
        host.export_session(&s.session_id, nucleic_protocol::ExportFormat::Jsonl).await.unwrap();
    let exported = dir.path().join("export.md");
    std::fs::write(&exported, &markdown).unwrap();
    let imported = host.import_session(&exported).await.unwrap();
    assert!(imported.read_only);
    assert_ne!(imported.session_id, s.session_id);
    assert_eq!(imported.last_seq, jsonl.lines().count() as u64, "every event came back");
    assert!(matches!(
        host.send_input(&imported.session_id, "more").await,
        Err(HostError::Invalid(_))
    ));

    let claude = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../transfer/tests/fixtures/claude-transcript.jsonl");
    let from_claude = host.import_session(&claude).await.unwrap();
    assert!(from_claude.read_only);
    assert_eq!(from_claude.backend, nucleic_protocol::Backend::ClaudeCode);
    let mut events = host.subscribe(&from_claude.session_id, 1).await.unwrap();
    let mut kinds = Vec::new();
    while let Some(e) = events.next().await.unwrap() {
        kinds.push(e.kind.type_name());
    }
    assert_eq!(kinds[0], "sessionCreated");
    assert!(kinds.contains(&"userText") && kinds.contains(&"toolResult"), "{kinds:?}");
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "not an export\n").unwrap();
    assert!(host.import_session(&garbage).await.is_err());

    // A worktree nobody owns: reported, removed only with apply.
    git(
        &root,
        &["worktree", "add", "-q", "-b", "nucleic/stray", ".nucleic/worktrees/stray", "main"],
    );
    let report = serde_json::to_value(host.gc(false).await.unwrap()).unwrap();
    let orphans = report["orphanWorktrees"].as_array().unwrap();
    assert_eq!(orphans.len(), 1, "{report}");
    assert!(root.join(".nucleic/worktrees/stray").exists());
    serde_json::to_value(host.gc(true).await.unwrap()).unwrap();
    assert!(!root.join(".nucleic/worktrees/stray").exists());
    assert!(
        serde_json::to_value(host.gc(false).await.unwrap()).unwrap()["orphanWorktrees"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // The session's worktree deleted behind the host's back: a clear refusal, not a crash.
    let path = s.worktree.unwrap().path;
    std::fs::remove_dir_all(&path).unwrap();
    let e = host.git_facts(&s.session_id, false).await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::GitRefused);
    assert!(e.to_string().contains(&path) || e.to_string().contains("missing"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn dirty_or_detached_main_checkouts_and_bad_cursors() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();

    // A dirty main checkout does not stop a session (it works in its own worktree) …
    std::fs::write(root.join("README.md"), "edited by the user\n").unwrap();
    let s = host
        .new_session(new_session(&project.project_id, "write a.txt containing A"), "test")
        .await
        .unwrap();
    approve_until_turn_done(&host, &s.session_id).await;
    // … but merging into the branch that dirty checkout has checked out is refused, untouched.
    let before = git(&root, &["rev-parse", "main"]);
    let e = host
        .finish(
            &s.session_id,
            FinishAction::Merge { message: None, update_checkout: true, force_reason: None },
            "test",
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::GitRefused, "{e}");
    assert_eq!(git(&root, &["rev-parse", "main"]), before);
    assert_eq!(std::fs::read_to_string(root.join("README.md")).unwrap(), "edited by the user\n");

    // Detached main checkout: the base branch is only a ref there, so the merge just moves it.
    git(&root, &["checkout", "-q", "--detach", "HEAD"]);
    let merge = FinishAction::Merge {
        message: Some("merge a".into()),
        update_checkout: false,
        force_reason: None,
    };
    host.finish(&s.session_id, merge, "test").await.unwrap();
    assert_eq!(git(&root, &["show", "main:a.txt"]), "A\n");
    assert_eq!(std::fs::read_to_string(root.join("README.md")).unwrap(), "edited by the user\n");
    assert!(!root.join("a.txt").exists(), "the detached checkout's files are untouched");

    // Cursors past the end are refused; the end itself (last + 1) waits for new events.
    let last = host.session_summary(&s.session_id).await.unwrap().last_seq;
    let e = host.subscribe(&s.session_id, last + 5).await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::BadCursor);
    assert!(host.subscribe(&s.session_id, last + 1).await.is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conflicting_merge_names_the_files_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let a = host
        .new_session(new_session(&project.project_id, "write same.txt containing one"), "t")
        .await
        .unwrap();
    let b = host
        .new_session(new_session(&project.project_id, "write same.txt containing two"), "t")
        .await
        .unwrap();
    approve_until_turn_done(&host, &a.session_id).await;
    approve_until_turn_done(&host, &b.session_id).await;
    host.finish(
        &a.session_id,
        FinishAction::Merge { message: None, update_checkout: true, force_reason: None },
        "t",
    )
    .await
    .unwrap();
    let preview = host.git_facts(&b.session_id, false).await.unwrap();
    assert_eq!(preview.conflicts, vec!["same.txt".to_owned()], "the preview sees it coming");
    let tip = git(&root, &["rev-parse", "main"]);
    let e = host
        .finish(
            &b.session_id,
            FinishAction::Squash { message: None, update_checkout: true, force_reason: None },
            "t",
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::GitRefused);
    assert!(e.to_string().contains("same.txt"), "{e}");
    assert_eq!(git(&root, &["rev-parse", "main"]), tip);
    assert_eq!(git(&root, &["status", "--porcelain"]), "");
    let b_path = b.worktree.unwrap().path;
    assert_eq!(std::fs::read_to_string(Path::new(&b_path).join("same.txt")).unwrap(), "two\n");
    assert_eq!(
        git(Path::new(&b_path), &["status", "--porcelain"]),
        "?? same.txt\n",
        "still uncommitted"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn guardrails_refuse_sessions_beyond_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let config = |limits: Limits| HostConfig {
        home: dir.path().join("home"),
        agents: AgentPaths {
            claude: None,
            codex: None,
            gemini: None,
            opencode: None,
            qwen: None,
            sim_program: nucleic(),
            sim_prefix: vec!["__sim-agent".into()],
            nucleic: nucleic(),
        },
        limits,
        approval_timeout: None,
        setup_timeout: Duration::from_secs(2),
        agent_env: Vec::new(),
        agent_isolation: nucleic_host::AgentIsolation::Auto,
        keepers: None,
        policy: false,
    };
    let host =
        Host::open(config(Limits { max_live_sessions: 1, max_worktrees: 10, min_free_bytes: 0 }))
            .await
            .unwrap();
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    host.new_session(new_session(&project.project_id, "say hi"), "t").await.unwrap();
    let e = host.new_session(new_session(&project.project_id, "say hi"), "t").await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::LimitReached, "{e}");
    // Its session is live: the next host on this home would be refused while its writer runs.
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
    drop(host);

    let host =
        Host::open(config(Limits { max_live_sessions: 10, max_worktrees: 1, min_free_bytes: 0 }))
            .await
            .unwrap();
    let e = host.new_session(new_session(&project.project_id, "say hi"), "t").await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::LimitReached, "one worktree exists already: {e}");
    drop(host);

    let host = Host::open(config(Limits {
        max_live_sessions: 10,
        max_worktrees: 10,
        min_free_bytes: u64::MAX,
    }))
    .await
    .unwrap();
    let e = host.new_session(new_session(&project.project_id, "say hi"), "t").await.unwrap_err();
    assert_eq!(e.code(), ProtocolErrorCode::LimitReached);
    assert!(e.to_string().contains("free"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_catalog_is_rebuilt_from_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let s = host
        .new_session(new_session(&project.project_id, "write a.txt containing A"), "t")
        .await
        .unwrap();
    approve_until_turn_done(&host, &s.session_id).await;
    host.stop(&s.session_id).await.unwrap();
    drop(host);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let catalog = dir.path().join("home/catalog.sqlite");
    std::fs::write(&catalog, b"this is not a database, it was damaged").unwrap();
    let _ = std::fs::remove_file(dir.path().join("home/catalog.sqlite-wal"));
    std::fs::remove_dir_all(s.worktree.as_ref().unwrap().path.clone()).unwrap();

    let host = self::host(dir.path()).await;
    let report = host.recovery();
    assert!(report.catalog_rebuilt_from.is_some(), "{report:?}");
    assert_eq!(report.missing_worktrees, vec![s.session_id.clone()]);
    let sessions = host.list_sessions(None, true).await.unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0].session_id, s.session_id);
    assert_eq!(sessions[0].title, "write a.txt containing A");
    let projects = host.list_projects().await.unwrap();
    assert_eq!(projects.len(), 1, "the project came back from the session's sessionCreated");
    assert_eq!(projects[0].root, root.to_string_lossy());
}
