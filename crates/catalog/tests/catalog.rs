//! Integration tests of the catalog: opening, projects, folding events, rebuild, devices, ids.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nucleic_catalog::{
    AgentProcess, Catalog, CatalogError, NewDevice, NewProject, ProjectSettings, SCHEMA_VERSION,
    SessionFilter, SessionRow, UNTITLED,
};
use nucleic_protocol::{
    ApprovalRequested, ApprovalResolved, Backend, DecisionKind, Event, EventKind, RunFinished,
    RunOutcome, SessionCreated, SessionStarted, SessionStatus, SessionUpdated, StatusChanged,
    TextBlock, Timestamp, Usage, WorktreeInfo,
};
use nucleic_store::TranscriptWriter;
use pretty_assertions::assert_eq;

const T0: i64 = 1_780_000_000_000;

fn ev(session: &str, seq: u64, kind: EventKind) -> Event {
    Event {
        seq,
        at: Timestamp::from_unix_millis(T0 + i64::try_from(seq).unwrap() * 1000),
        session_id: session.to_owned(),
        backend: Backend::Simulated,
        native_type: None,
        origin: None,
        kind,
    }
}

fn created(title: &str, project: Option<(&str, &str)>) -> EventKind {
    EventKind::SessionCreated(SessionCreated {
        title: title.to_owned(),
        project_id: project.map(|p| p.0.to_owned()),
        project_root: project.map(|p| p.1.to_owned()),
        cwd: "/wt/s1".to_owned(),
        worktree: Some(WorktreeInfo {
            path: "/wt/s1".to_owned(),
            branch: "nucleic/s1".to_owned(),
            base_ref: "main".to_owned(),
            base_sha: "abc123".to_owned(),
        }),
        model: Some("sonnet".to_owned()),
        permission_mode: Some("default".to_owned()),
        read_only: false,
        continues_session_id: None,
        created_by: None,
        parent_session_id: None,
        mode: None,
    })
}

fn status(status: SessionStatus, previous: SessionStatus) -> EventKind {
    EventKind::StatusChanged(StatusChanged { status, previous })
}

fn usage(cost: f64) -> EventKind {
    EventKind::Usage(Usage { cost_usd: Some(cost), ..Usage::default() })
}

fn text(t: &str) -> EventKind {
    EventKind::UserText(TextBlock {
        is_partial: false,
        message_id: "m".to_owned(),
        text: t.to_owned(),
    })
}

fn ask(id: &str) -> EventKind {
    EventKind::ApprovalRequested(ApprovalRequested {
        request_id: id.to_owned(),
        tool_call_id: None,
        tool_name: "Bash".to_owned(),
        input: serde_json::json!({"command": "ls"}),
        description: None,
        blocked_path: None,
        risk: None,
        risk_reasons: Vec::new(),
    })
}

fn answer(id: &str, decision: DecisionKind) -> EventKind {
    EventKind::ApprovalResolved(ApprovalResolved {
        request_id: id.to_owned(),
        decision,
        by: "phone".to_owned(),
        updated_input: None,
        message: None,
        mode: None,
    })
}

fn updated(title: Option<&str>, archived: Option<bool>) -> EventKind {
    EventKind::SessionUpdated(SessionUpdated {
        title: title.map(str::to_owned),
        archived,
        mode: None,
        note: None,
        by: "cli".to_owned(),
    })
}

/// A full session: created, started, two turns with costs, an approval asked and answered,
/// a second one left pending, a rename, and the run's end.
fn story(session: &str, project: Option<(&str, &str)>) -> Vec<Event> {
    use SessionStatus::*;
    let kinds = vec![
        created("first", project),
        EventKind::SessionStarted(SessionStarted {
            backend_session_id: "b-1".to_owned(),
            cwd: "/wt/s1".to_owned(),
            model: "opus".to_owned(),
            tool_names: vec![],
            permission_mode: None,
            agent_version: None,
        }),
        status(Running, Idle),
        text("hi"),
        usage(0.25),
        ask("r1"),
        status(AwaitingApproval, Running),
        answer("r1", DecisionKind::AllowEdited),
        usage(0.5),
        ask("r2"),
        updated(Some("renamed"), None),
        EventKind::RunFinished(RunFinished::new(RunOutcome::ApiError, None, Some(1))),
        status(Error, AwaitingApproval),
    ];
    kinds.into_iter().zip(1..).map(|(k, seq)| ev(session, seq, k)).collect()
}

fn open(dir: &Path) -> Catalog {
    Catalog::open(&dir.join("state/catalog.db")).unwrap()
}

fn project(id: &str, root: &str) -> NewProject {
    NewProject {
        id: id.to_owned(),
        name: id.to_owned(),
        root: root.to_owned(),
        settings: ProjectSettings::defaults(Backend::ClaudeCode),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn fresh_file_is_migrated_private_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/catalog.db");
    let cat = Catalog::open(&path).unwrap();
    assert_eq!(cat.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    cat.add_project(&project("p", "/r")).unwrap();
    for companion in ["catalog.db-wal", "catalog.db-shm"] {
        let p = dir.path().join("state").join(companion);
        if p.exists() {
            assert_eq!(mode(&p), 0o600, "{companion}");
        }
    }
    drop(cat);
    let cat = Catalog::open(&path).unwrap();
    assert_eq!(cat.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(cat.list_projects().unwrap().len(), 1);
}

#[test]
fn newer_schema_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    drop(Catalog::open(&path).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.pragma_update(None, "user_version", 99).unwrap();
    drop(raw);
    let err = Catalog::open(&path).unwrap_err();
    assert!(matches!(err, CatalogError::TooNew { found: 99, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("schema version 99") && msg.contains("catalog.db"), "{msg}");
}

#[test]
fn corrupt_file_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.db");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    let err = Catalog::open(&path).unwrap_err();
    assert!(err.is_corrupt(), "{err:?}");
    assert!(err.to_string().contains(path.to_str().unwrap()), "{err}");
}

#[test]
fn projects_round_trip_and_roots_are_unique() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    let added = cat.add_project(&project("p1", "/repo")).unwrap();
    assert_eq!(cat.project("p1").unwrap(), Some(added.clone()));
    assert_eq!(cat.project_by_root("/repo").unwrap(), Some(added));
    let err = cat.add_project(&project("p2", "/repo")).unwrap_err();
    assert!(matches!(&err, CatalogError::DuplicateProject { root } if root == "/repo"), "{err}");

    cat.rename_project("p1", "Repo").unwrap();
    let settings = ProjectSettings {
        default_branch: "trunk".to_owned(),
        default_backend: Backend::Codex,
        setup_script: Some("make deps".to_owned()),
        setup_timeout_secs: Some(300),
        copy_files: vec![".env".to_owned(), "config/local.toml".to_owned()],
        checks: vec![nucleic_protocol::CheckSpec {
            name: "tests".to_owned(),
            argv: vec!["cargo".to_owned(), "test".to_owned()],
            timeout_secs: 300,
            env: vec!["CARGO_HOME".to_owned()],
            required: true,
        }],
        checks_after_turn: true,
        pool_size: 0,
        disk_policy: nucleic_protocol::DiskPolicy {
            budget_bytes: Some(20_000_000_000),
            reclaim_after_secs: Some(604_800),
        },
        sandbox: nucleic_protocol::ProjectSandbox {
            read_only: vec!["/opt/sdk".to_owned()],
            writable: vec!["/var/cache/app".to_owned()],
            hide: vec!["/srv/secrets".to_owned()],
            allow_domains: vec!["*.crates.io".to_owned()],
        },
    };
    let row = cat.update_project_settings("p1", &settings).unwrap();
    assert_eq!((row.name.as_str(), &row.settings), ("Repo", &settings));
    assert_eq!(cat.list_projects().unwrap(), vec![row]);
    assert!(matches!(cat.rename_project("nope", "x"), Err(CatalogError::ProjectNotFound { .. })));
    assert!(matches!(cat.remove_project("nope"), Err(CatalogError::ProjectNotFound { .. })));
}

#[test]
fn remove_project_waits_for_sessions_to_be_archived() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    cat.add_project(&project("p", "/repo")).unwrap();
    let t = dir.path().join("s1.jsonl");
    cat.apply_events("s1", &t, &[ev("s1", 1, created("one", Some(("p", "/repo"))))]).unwrap();
    let err = cat.remove_project("p").unwrap_err();
    assert!(matches!(err, CatalogError::ProjectHasSessions { count: 1, .. }), "{err}");
    cat.apply_events("s1", &t, &[ev("s1", 2, updated(None, Some(true)))]).unwrap();
    cat.remove_project("p").unwrap();
    assert_eq!(cat.project("p").unwrap(), None);
    assert_eq!(cat.session("s1").unwrap().unwrap().project_id, None);
}

#[test]
fn events_fold_into_the_session_row() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    cat.add_project(&project("p", "/repo")).unwrap();
    let t = dir.path().join("s1/transcript.jsonl");
    let events = story("s1", Some(("p", "/repo")));
    cat.apply_events("s1", &t, &events[..6]).unwrap();
    let mid = cat.session("s1").unwrap().unwrap();
    assert_eq!((mid.status, mid.pending_approvals, mid.last_seq), (SessionStatus::Running, 1, 6));
    assert_eq!(cat.pending_approvals("s1").unwrap().len(), 1);

    cat.apply_events("s1", &t, &events[6..]).unwrap();
    // Re-applying (e.g. after a crash between transcript and catalog) changes nothing.
    cat.apply_events("s1", &t, &events).unwrap();
    let row = cat.session("s1").unwrap().unwrap();
    let expected = SessionRow {
        id: "s1".to_owned(),
        project_id: Some("p".to_owned()),
        title: "renamed".to_owned(),
        backend: Backend::Simulated,
        model: Some("opus".to_owned()),
        permission_mode: Some("default".to_owned()),
        status: SessionStatus::Error,
        backend_session_id: Some("b-1".to_owned()),
        cwd: "/wt/s1".to_owned(),
        worktree: Some(WorktreeInfo {
            path: "/wt/s1".to_owned(),
            branch: "nucleic/s1".to_owned(),
            base_ref: "main".to_owned(),
            base_sha: "abc123".to_owned(),
        }),
        transcript: t.to_str().unwrap().to_owned(),
        last_seq: 13,
        pending_approvals: 1,
        cost_usd: 0.75,
        outcome: Some(RunOutcome::ApiError),
        archived: false,
        read_only: false,
        continues_session_id: None,
        agent: None,
        created_at: T0 + 1000,
        updated_at: T0 + 13_000,
        disk: None,
        worktree_reclaimed: false,
        mode: None,
        parent_session_id: None,
    };
    assert_eq!(row, expected);
    let disk = nucleic_protocol::DiskUsage { bytes: 5_000, build_bytes: 1_000, measured_at: T0 };
    cat.set_disk("s1", disk).unwrap();
    assert_eq!(cat.session("s1").unwrap().unwrap().disk, Some(disk));
    assert!(matches!(cat.set_disk("nope", disk), Err(CatalogError::SessionNotFound { .. })));

    let approvals = cat.approvals("s1").unwrap();
    assert_eq!(approvals.len(), 2);
    assert_eq!(approvals[0].decision, Some(DecisionKind::AllowEdited));
    assert_eq!(approvals[0].decided_by.as_deref(), Some("phone"));
    assert_eq!((approvals[0].requested_seq, approvals[0].resolved_seq), (6, Some(8)));
    assert_eq!(approvals[0].input, serde_json::json!({"command": "ls"}));
    let pending = cat.pending_approvals("s1").unwrap();
    assert_eq!(pending.iter().map(|a| a.request_id.as_str()).collect::<Vec<_>>(), ["r2"]);

    cat.apply_events("s1", &t, &[ev("s1", 14, answer("r2", DecisionKind::Cancelled))]).unwrap();
    assert_eq!(cat.session("s1").unwrap().unwrap().pending_approvals, 0);
    assert!(cat.pending_approvals("s1").unwrap().is_empty());
}

#[test]
fn sessions_without_creation_are_untitled_and_foreign_events_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    let t = dir.path().join("x.jsonl");
    cat.apply_events("s9", &t, &[ev("s9", 1, text("hello")), ev("s9", 2, usage(0.1))]).unwrap();
    let row = cat.session("s9").unwrap().unwrap();
    assert_eq!(
        (row.title.as_str(), row.cwd.as_str(), row.status),
        (UNTITLED, "", SessionStatus::Idle)
    );
    assert_eq!((row.last_seq, row.created_at, row.project_id), (2, T0 + 1000, None));

    let err = cat.apply_events("s9", &t, &[ev("s9", 3, text("a")), ev("other", 4, text("b"))]);
    assert!(matches!(err, Err(CatalogError::SessionMismatch { .. })));
    assert_eq!(cat.session("s9").unwrap().unwrap().last_seq, 2, "nothing written");
}

#[test]
fn listing_filters_and_agent_processes() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    cat.add_project(&project("p", "/repo")).unwrap();
    let t = dir.path().join("t.jsonl");
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        let proj = (id != "c").then_some(("p", "/repo"));
        let seq = u64::try_from(i).unwrap() + 1;
        // Later seqs are later in time, so c is the most recently updated.
        cat.apply_events(id, &t, &[ev(id, seq, created(id, proj))]).unwrap();
    }
    cat.apply_events("b", &t, &[ev("b", 3, updated(None, Some(true)))]).unwrap();
    let ids = |f: SessionFilter| -> Vec<String> {
        cat.list_sessions(&f).unwrap().into_iter().map(|s| s.id).collect()
    };
    assert_eq!(ids(SessionFilter::default()), ["c", "a"]);
    assert_eq!(ids(SessionFilter { include_archived: true, project_id: None }), ["b", "c", "a"]);
    assert_eq!(ids(SessionFilter { project_id: Some("p".into()), include_archived: false }), ["a"]);

    let agent = AgentProcess { pid: 4242, start_ticks: 987_654 };
    cat.set_agent_process("a", Some(agent)).unwrap();
    let with = cat.sessions_with_agent_process().unwrap();
    assert_eq!((with.len(), with[0].agent), (1, Some(agent)));
    cat.set_agent_process("a", None).unwrap();
    assert!(cat.sessions_with_agent_process().unwrap().is_empty());
    assert!(matches!(cat.set_agent_process("zz", None), Err(CatalogError::SessionNotFound { .. })));
}

fn write_transcript(sessions: &Path, id: &str, events: &[Event]) -> PathBuf {
    let path = sessions.join(id).join("transcript.jsonl");
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    w.append(events).unwrap();
    path
}

fn all_rows(cat: &Catalog) -> Vec<SessionRow> {
    let mut rows =
        cat.list_sessions(&SessionFilter { include_archived: true, project_id: None }).unwrap();
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    rows
}

#[test]
fn rebuild_is_idempotent_and_matches_incremental_folding() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let db = dir.path().join("state/catalog.db");
    let cat = Catalog::open(&db).unwrap();
    cat.add_project(&project("p", "/src/repo")).unwrap();

    // s1: the full story; s2: a long session (several rebuild chunks) in an unknown project;
    // s3: no sessionCreated and a torn tail.
    let s1 = story("s1", Some(("p", "/src/repo")));
    let mut s2 = vec![ev("s2", 1, created("long", Some(("q", "/src/other"))))];
    for seq in 2..=2600 {
        s2.push(ev("s2", seq, if seq % 100 == 0 { usage(0.125) } else { text("x") }));
    }
    let s3 = vec![
        ev("s3", 1, text("orphan")),
        ev("s3", 2, status(SessionStatus::Running, SessionStatus::Idle)),
    ];
    let mut paths = Vec::new();
    for (id, events) in [("s1", &s1), ("s2", &s2), ("s3", &s3)] {
        let path = write_transcript(&sessions, id, events);
        for batch in events.chunks(7) {
            cat.apply_events(id, &path, batch).unwrap();
        }
        paths.push(path);
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open(&paths[2])
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"seq\":3,\"at"))
        .unwrap();
    std::fs::create_dir_all(sessions.join("empty-dir")).unwrap();
    let agent = AgentProcess { pid: 77, start_ticks: 12 };
    cat.set_agent_process("s1", Some(agent)).unwrap();
    let incremental = all_rows(&cat);
    let incremental_approvals = cat.approvals("s1").unwrap();
    assert_eq!(incremental[1].cost_usd, 26.0 * 0.125);
    assert_eq!(cat.project("q").unwrap().unwrap().name, "other");

    // Over the live database: same rows, agent process kept, nothing duplicated.
    let report = cat.rebuild_sessions(&sessions).unwrap();
    assert_eq!((report.sessions, report.events, report.torn_tails), (3, 13 + 2600 + 2, 1));
    assert_eq!((report.skipped_lines, report.projects_created, report.failed.len()), (0, 0, 0));
    assert_eq!(all_rows(&cat), incremental);
    assert_eq!(cat.approvals("s1").unwrap(), incremental_approvals);
    drop(cat);

    // From nothing: the same rows (minus the host-only agent process), twice.
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let cat = Catalog::open(&db).unwrap();
    let first = cat.rebuild_sessions(&sessions).unwrap();
    assert_eq!(first.projects_created, 2);
    let second = cat.rebuild_sessions(&sessions).unwrap();
    assert_eq!(second.projects_created, 0);
    let mut expected = incremental;
    expected[0].agent = None;
    assert_eq!(all_rows(&cat), expected);
    assert_eq!(cat.approvals("s1").unwrap(), incremental_approvals);
    let names: Vec<_> = cat.list_projects().unwrap().into_iter().map(|p| (p.id, p.name)).collect();
    assert_eq!(names, [("q".to_owned(), "other".to_owned()), ("p".to_owned(), "repo".to_owned())]);
    assert_eq!(cat.session("s3").unwrap().unwrap().title, UNTITLED);
}

#[test]
fn rebuild_reports_bad_transcripts_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    write_transcript(&sessions, "good", &[ev("good", 1, text("a"))]);
    write_transcript(&sessions, "copied", &[ev("original", 1, text("a"))]);
    let cat = open(dir.path());
    let report = cat.rebuild_sessions(&sessions).unwrap();
    assert_eq!(report.sessions, 1);
    assert_eq!(report.failed.len(), 1);
    assert!(report.failed[0].starts_with("copied: "), "{:?}", report.failed);
    assert_eq!(cat.rebuild_sessions(&dir.path().join("missing")).unwrap(), Default::default());
}

#[test]
fn client_responses_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    cat.remember_response("phone", "m1", r#"{"ok":true}"#).unwrap();
    cat.remember_response("phone", "m1", r#"{"ok":false}"#).unwrap();
    drop(cat);
    let cat = open(dir.path());
    assert_eq!(cat.recall_response("phone", "m1").unwrap().as_deref(), Some(r#"{"ok":true}"#));
    assert_eq!(cat.recall_response("laptop", "m1").unwrap(), None);
    assert_eq!(cat.forget_responses_before(0).unwrap(), 0);
    assert_eq!(cat.forget_responses_before(i64::MAX).unwrap(), 1);
    assert_eq!(cat.recall_response("phone", "m1").unwrap(), None);
}

#[test]
fn devices_pair_touch_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let cat = open(dir.path());
    let new = NewDevice {
        id: "d1".to_owned(),
        name: "phone".to_owned(),
        public_key: Some(vec![1, 2, 3]),
        paired_at: 10,
    };
    let row = cat.add_device(&new).unwrap();
    assert!(matches!(cat.add_device(&new), Err(CatalogError::DuplicateDevice { .. })));
    cat.touch_device("d1", 20).unwrap();
    cat.revoke_device("d1", 30).unwrap();
    cat.revoke_device("d1", 40).unwrap();
    let stored = cat.device("d1").unwrap().unwrap();
    assert_eq!(stored.last_seen_at, Some(20));
    assert_eq!(stored.revoked_at, Some(30));
    assert_eq!(stored.public_key, row.public_key);
    assert_eq!(cat.list_devices().unwrap(), vec![stored]);
    assert!(matches!(cat.touch_device("d2", 1), Err(CatalogError::DeviceNotFound { .. })));
}

#[test]
fn cookie_browsers_are_revoked_by_the_key_migration_and_rotation_revokes_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.sqlite");
    // A schema-2 database with a paired device and a browser signed in by cookie.
    {
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(include_str!("../migrations/0001_init.sql")).unwrap();
        raw.execute_batch(include_str!("../migrations/0002_browser_sessions.sql")).unwrap();
        raw.pragma_update(None, "user_version", 2).unwrap();
        raw.execute(
            "INSERT INTO devices (id, name, public_key, paired_at) VALUES ('old', 'phone', x'01', 5)",
            [],
        )
        .unwrap();
        raw.execute(
            "INSERT INTO devices (id, name, paired_at, session_hash) VALUES ('b1', 'browser', 6, 'h')",
            [],
        )
        .unwrap();
    }
    let cat = Catalog::open(&path).unwrap();
    assert_eq!(cat.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(cat.device("old").unwrap().unwrap().revoked_at, None, "keyed devices stay");
    assert!(cat.device("b1").unwrap().unwrap().revoked_at.is_some(), "cookie browsers revoked");
    let new = NewDevice {
        id: "d2".to_owned(),
        name: "laptop".to_owned(),
        public_key: Some(vec![2]),
        paired_at: 7,
    };
    cat.add_device(&new).unwrap();
    assert_eq!(cat.revoke_all_devices(50).unwrap(), 2);
    assert_eq!(cat.revoke_all_devices(60).unwrap(), 0);
    assert!(cat.list_devices().unwrap().iter().all(|d| d.revoked_at.is_some()));
    assert_eq!(cat.device("d2").unwrap().unwrap().revoked_at, Some(50));
}
