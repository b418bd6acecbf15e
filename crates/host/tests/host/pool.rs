//! The warm worktree pool: sessions start in prepared worktrees, the pool refills and follows
//! its base, and bad input (a tampered pooled worktree, a failing setup, a full disk, a base
//! branch deleted or force-pushed, a restart) never hands out a wrong worktree or leaks one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_host::{Host, HostConfig};
use nucleic_protocol::{EventKind, PoolSummary, SessionStatus};

use crate::support::{config, git, new_session, repo};

/// A temp dir on tmpfs: worktree churn on this machine's ext4 is slow.
fn shm_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("nucleic-pool-").to_owned();
    if shm.is_dir() { builder.tempdir_in(shm).unwrap() } else { builder.tempdir().unwrap() }
}

async fn pooled_host(config: HostConfig) -> Arc<Host> {
    let host = Host::open(config).await.unwrap();
    host.start_pools();
    host
}

async fn pool(host: &Host, project: &str) -> PoolSummary {
    host.project_summary_of(project).await.unwrap().pool.expect("pools run")
}

/// Waits (30 s at most) until the project's pool satisfies `done`.
async fn wait_pool(host: &Host, project: &str, what: &str, done: impl Fn(&PoolSummary) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = pool(host, project).await;
        if done(&now) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for the pool to be {what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The directories under `<root>/.nucleic/pool`.
fn pooled_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".nucleic/pool")) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs
}

/// Branches git has under `nucleic-pool/`.
fn pool_branches(root: &Path) -> Vec<String> {
    git(root, &["for-each-ref", "--format=%(refname:short)", "refs/heads/nucleic-pool/"])
        .lines()
        .map(str::to_owned)
        .collect()
}

fn worktree_of(summary: &nucleic_protocol::SessionSummary) -> PathBuf {
    PathBuf::from(&summary.worktree.as_ref().expect("a worktree").path)
}

const MARK_SETUP: &str = "echo \"$NUCLEIC_WORKTREE\" > .setup-ran";

#[tokio::test(flavor = "multi_thread")]
async fn a_session_starts_in_a_prepared_worktree_and_the_pool_refills() {
    let dir = shm_dir();
    let root = repo(dir.path());
    std::fs::write(root.join(".gitignore"), ".env\n.setup-ran\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "ignore"]);
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    let host = pooled_host(config(dir.path())).await;
    let project = host
        .add_project(root.to_str().unwrap(), None, |s| {
            s.setup_script = Some(MARK_SETUP.into());
            s.copy_files = vec![".env".into()];
        })
        .await
        .unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2 && p.size == 2).await;
    let summary = pool(&host, &id).await;
    assert!(summary.disk_bytes > 0 && summary.error.is_none(), "{summary:?}");
    let prepared = pooled_dirs(&root);
    assert_eq!(prepared.len(), 2);

    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    let worktree = worktree_of(&session);
    assert!(worktree.starts_with(root.join(".nucleic/worktrees")), "{worktree:?}");
    // The setup ran before the session existed, in one of the prepared worktrees.
    let ran_in =
        PathBuf::from(std::fs::read_to_string(worktree.join(".setup-ran")).unwrap().trim());
    assert!(prepared.contains(&ran_in), "{ran_in:?} not in {prepared:?}");
    assert_eq!(std::fs::read_to_string(worktree.join(".env")).unwrap(), "SECRET=1\n");
    let branch = &session.worktree.as_ref().unwrap().branch;
    assert_eq!(git(&worktree, &["symbolic-ref", "--short", "HEAD"]).trim(), branch);
    let log = dir.path().join("home/sessions").join(&session.session_id).join("setup.log");
    assert!(log.is_file(), "the pool's setup log becomes the session's");
    // Refilled behind it; the session's worktree is an ordinary one.
    wait_pool(&host, &id, "refilled", |p| p.ready == 2).await;
    assert_eq!(pooled_dirs(&root).len(), 2);
    assert_eq!(pool_branches(&root).len(), 2);
    let gc = serde_json::to_value(host.gc(false).await.unwrap()).unwrap();
    assert_eq!(gc["orphanWorktrees"], serde_json::json!([]), "{gc}");
    assert_eq!(gc["stalePooledWorktrees"], serde_json::json!([]), "{gc}");

    // Size 0 turns it off and removes what was prepared.
    host.set_pool_size(&id, 0).await.unwrap();
    wait_pool(&host, &id, "empty", |p| p.ready == 0 && p.size == 0).await;
    host.recheck_pools().await;
    assert!(pooled_dirs(&root).is_empty());
    assert!(pool_branches(&root).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pooled_worktree_changed_behind_the_hosts_back_is_never_handed_out() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let host = pooled_host(config(dir.path())).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;
    // One gets a tracked file edited, the other a commit on its branch.
    let [edited, committed] = <[PathBuf; 2]>::try_from(pooled_dirs(&root)).unwrap();
    std::fs::write(edited.join("README.md"), "tampered\n").unwrap();
    std::fs::write(committed.join("README.md"), "committed\n").unwrap();
    git(&committed, &["commit", "-q", "-am", "behind the host's back"]);

    // Both are seen when a session would take them (the edit by the pool's watch on the
    // directories, the commit by HEAD): sessions get clean worktrees instead.
    let first = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    let first_readme = std::fs::read_to_string(worktree_of(&first).join("README.md")).unwrap();
    let second = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    for (summary, readme) in [
        (&first, first_readme),
        (&second, std::fs::read_to_string(worktree_of(&second).join("README.md")).unwrap()),
    ] {
        assert_eq!(readme, "hello\n", "{summary:?} got a tampered worktree");
        let head = git(&worktree_of(summary), &["log", "--format=%s", "-1"]);
        assert_eq!(head.trim(), "init");
    }
    // The pool throws both away and makes new ones.
    wait_pool(&host, &id, "refilled", |p| p.ready == 2).await;
    let now = pooled_dirs(&root);
    assert!(!now.contains(&edited) && !now.contains(&committed), "{now:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_setup_failing_in_the_pool_is_reported_and_sessions_take_the_slow_path() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let host = pooled_host(config(dir.path())).await;
    let project = host
        .add_project(root.to_str().unwrap(), None, |s| {
            s.setup_script = Some("echo no-deps >&2; exit 7".into());
        })
        .await
        .unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "stopped", |p| p.error.is_some()).await;
    let summary = pool(&host, &id).await;
    let error = summary.error.unwrap();
    assert!(error.contains("setup script failed") && error.contains("exit 7"), "{error}");
    assert_eq!(summary.ready, 0);
    assert!(pooled_dirs(&root).is_empty() && pool_branches(&root).is_empty());
    // The session runs the setup itself, which fails the same way: shown on the session.
    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    assert_eq!(session.status, SessionStatus::Error);
    let mut events = host.subscribe(&session.session_id, 1).await.unwrap();
    let mut messages = Vec::new();
    while let Some(e) = events.next().await.unwrap() {
        if let EventKind::Error(err) = &e.kind {
            messages.push(err.message.clone());
        }
    }
    assert!(messages.iter().any(|m| m.contains("setup script failed")), "{messages:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pool_follows_its_base_moved_force_pushed_or_deleted() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let host = pooled_host(config(dir.path())).await;
    let project =
        host.add_project(root.to_str().unwrap(), None, |s| s.pool_size = 1).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 1).await;
    let [pooled] = <[PathBuf; 1]>::try_from(pooled_dirs(&root)).unwrap();

    // Moved by one commit: the same pooled worktree follows it (not rebuilt).
    std::fs::write(root.join("new.txt"), "new\n").unwrap();
    git(&root, &["add", "new.txt"]);
    git(&root, &["commit", "-q", "-m", "base moves"]);
    host.recheck_pools().await;
    assert_eq!(pooled_dirs(&root), vec![pooled.clone()]);
    assert_eq!(std::fs::read_to_string(pooled.join("new.txt")).unwrap(), "new\n");

    // Force-pushed (rewritten): followed too; a session gets the rewritten tip.
    git(&root, &["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(root.join("other.txt"), "other\n").unwrap();
    git(&root, &["add", "other.txt"]);
    git(&root, &["commit", "-q", "-m", "rewritten"]);
    host.recheck_pools().await;
    assert!(!pooled.join("new.txt").exists());
    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    let wt = worktree_of(&session);
    assert!(wt.join("other.txt").exists() && !wt.join("new.txt").exists());
    assert_eq!(git(&wt, &["log", "--format=%s", "-1"]).trim(), "rewritten");

    // Deleted: the pool is emptied and says why.
    host.recheck_pools().await;
    git(&root, &["checkout", "-q", "--detach"]);
    git(&root, &["branch", "-D", "main"]);
    host.recheck_pools().await;
    let summary = pool(&host, &id).await;
    assert_eq!(summary.ready, 0);
    assert!(summary.error.as_deref().is_some_and(|e| e.contains("main")), "{summary:?}");
    assert!(pooled_dirs(&root).is_empty() && pool_branches(&root).is_empty());
    // A session on the deleted base is refused, naming it.
    let refused = host.new_session(new_session(&id, "say hi"), "test").await.unwrap_err();
    assert!(refused.to_string().contains("main"), "{refused}");
}

/// A pooled worktree changed while no host ran (no watch saw it) is found by the restarted
/// host's full check and discarded, never handed out.
#[tokio::test(flavor = "multi_thread")]
async fn a_pooled_worktree_changed_while_the_host_was_down_is_discarded() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let host = pooled_host(config(dir.path())).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
    drop(host);
    let [edited, planted] = <[PathBuf; 2]>::try_from(pooled_dirs(&root)).unwrap();
    std::fs::write(edited.join("README.md"), "tampered\n").unwrap();
    std::fs::write(planted.join("planted.txt"), "x\n").unwrap();

    let host = pooled_host(config(dir.path())).await;
    host.recheck_pools().await;
    let now = pooled_dirs(&root);
    assert!(!now.contains(&edited) && !now.contains(&planted), "{now:?}");
    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    let worktree = worktree_of(&session);
    assert_eq!(std::fs::read_to_string(worktree.join("README.md")).unwrap(), "hello\n");
    assert!(!worktree.join("planted.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_host_finds_its_pool_and_removes_what_it_did_not_record() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let host = pooled_host(config(dir.path())).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;
    let before = pooled_dirs(&root);
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
    drop(host);
    // Left by a host killed while preparing one: no record of it.
    git(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "nucleic-pool/pool-leftover",
            ".nucleic/pool/pool-leftover",
        ],
    );
    // A host without pools (gc, say) sees the leftover as stale and removes nothing it lists
    // until asked.
    let plain = Host::open(config(dir.path())).await.unwrap();
    let gc = serde_json::to_value(plain.gc(false).await.unwrap()).unwrap();
    assert_eq!(gc["stalePooledWorktrees"].as_array().unwrap().len(), 3, "{gc}");
    drop(plain);

    let host = pooled_host(config(dir.path())).await;
    host.recheck_pools().await;
    assert_eq!(pooled_dirs(&root), before, "the recorded ones are kept, the leftover removed");
    assert_eq!(pool_branches(&root).len(), 2);
    // The host's own first tending round may hold the worktrees (out of the ready list) while it
    // checks them again: wait for it rather than read the count mid-round.
    wait_pool(&host, &id, "ready again", |p| p.ready == 2).await;
    let gc = serde_json::to_value(host.gc(true).await.unwrap()).unwrap();
    assert_eq!(gc["stalePooledWorktrees"], serde_json::json!([]), "{gc}");
    assert_eq!(pooled_dirs(&root), before, "gc leaves the live pool alone");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_stops_the_pool_and_sessions_still_start() {
    if nucleic_testkit::isolated!("a_full_disk_stops_the_pool_and_sessions_still_start", mounts) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m"])
        .arg("tmpfs")
        .arg(&disk)
        .status()
        .unwrap();
    assert!(ok.success(), "mount tmpfs");
    let root = repo(&disk);
    let big = "x".repeat(400 * 1024);
    std::fs::write(root.join("big.txt"), &big).unwrap();
    git(&root, &["add", "big.txt"]);
    git(&root, &["commit", "-q", "-m", "big"]);
    // Leave less room than one more checkout of big.txt needs.
    let filler = disk.join("filler");
    let free = nix::sys::statvfs::statvfs(&disk).unwrap();
    let room = free.blocks_available() * free.fragment_size();
    std::fs::write(&filler, vec![0u8; (room as usize).saturating_sub(200 * 1024)]).unwrap();

    let mut config = config(dir.path());
    config.home = dir.path().join("home");
    let host = pooled_host(config).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "stopped", |p| p.error.is_some()).await;
    let summary = pool(&host, &id).await;
    let error = summary.error.clone().unwrap();
    assert!(
        error.contains("cannot prepare a worktree") && error.contains("unable to write"),
        "{error}"
    );
    assert_eq!(summary.ready, 0);
    assert!(pooled_dirs(&root).is_empty(), "a partial pooled worktree was left");
    assert!(pool_branches(&root).is_empty());
    // Space comes back: the pool stays stopped (it retries later), sessions take the slow path.
    std::fs::remove_file(&filler).unwrap();
    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    assert_ne!(session.status, SessionStatus::Error, "{session:?}");
    let wt = worktree_of(&session);
    assert_eq!(std::fs::read_to_string(wt.join("big.txt")).unwrap(), big);
    assert_eq!(pool(&host, &id).await.ready, 0);
}

/// A tending round takes a worktree out of the ready list only while it works on it: a session
/// created while the round moves one worktree to a new base (its setup running again) gets the
/// other one, already moved, instead of the slow path.
#[tokio::test(flavor = "multi_thread")]
async fn a_tending_round_leaves_the_worktrees_it_is_not_working_on_ready() {
    let dir = shm_dir();
    let root = repo(dir.path());
    std::fs::write(root.join(".gitignore"), ".setup-ran\n").unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "ignore"]);
    // Once armed, the first setup run in a pooled worktree passes and every later one waits
    // at the gate (30 s at most: the setup's deadline).
    let gates = dir.path().join("gates");
    std::fs::create_dir(&gates).unwrap();
    let setup = format!(
        "{MARK_SETUP}; G='{}'; case \"$NUCLEIC_WORKTREE\" in */.nucleic/pool/*) \
         if [ -e \"$G/armed\" ] && ! mkdir \"$G/first\" 2>/dev/null; then touch \"$G/waiting\"; \
         while [ ! -e \"$G/open\" ]; do sleep 0.02; done; fi;; esac",
        gates.display()
    );
    let host = pooled_host(config(dir.path())).await;
    let project = host
        .add_project(root.to_str().unwrap(), None, move |s| {
            s.setup_script = Some(setup);
            s.setup_timeout_secs = Some(30);
        })
        .await
        .unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;
    let prepared = pooled_dirs(&root);

    // The base moves: a round moves both worktrees, one after the other, running the setup
    // again in each; the second waits at the gate.
    std::fs::write(gates.join("armed"), "").unwrap();
    std::fs::write(root.join("new.txt"), "new\n").unwrap();
    git(&root, &["add", "new.txt"]);
    git(&root, &["commit", "-q", "-m", "base moves"]);
    let round = {
        let host = host.clone();
        tokio::spawn(async move { host.tend_pools_now().await })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gates.join("waiting").exists() {
        assert!(Instant::now() < deadline, "the second worktree's setup never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Mid-round: the first one is moved and ready, the second is held by the round.
    assert_eq!(pool(&host, &id).await.ready, 1, "mid-round, the moved worktree is ready");
    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    let worktree = worktree_of(&session);
    let ran_in =
        PathBuf::from(std::fs::read_to_string(worktree.join(".setup-ran")).unwrap().trim());
    assert!(prepared.contains(&ran_in), "took the slow path mid-round: {ran_in:?}");
    assert_eq!(std::fs::read_to_string(worktree.join("new.txt")).unwrap(), "new\n");

    std::fs::write(gates.join("open"), "").unwrap();
    round.await.unwrap();
    wait_pool(&host, &id, "refilled", |p| p.ready == 2).await;
}

/// A restarted host checks its recorded worktrees in full before handing them out; a session
/// created meanwhile waits (briefly) for that check instead of taking the slow path.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_created_while_a_restarted_host_checks_its_pool_waits_for_it() {
    let dir = shm_dir();
    let root = repo(dir.path());
    std::fs::write(root.join(".gitignore"), ".setup-ran\n").unwrap();
    // Enough files that a full check takes a while.
    for i in 0..3000 {
        let sub = root.join(format!("src/m{}", i % 30));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "files"]);
    let host = pooled_host(config(dir.path())).await;
    let project = host
        .add_project(root.to_str().unwrap(), None, |s| s.setup_script = Some(MARK_SETUP.into()))
        .await
        .unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;
    let prepared = pooled_dirs(&root);
    host.shutdown(Duration::from_secs(1), Duration::from_secs(5)).await;
    drop(host);

    let host = pooled_host(config(dir.path())).await;
    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    let worktree = worktree_of(&session);
    let ran_in =
        PathBuf::from(std::fs::read_to_string(worktree.join(".setup-ran")).unwrap().trim());
    assert!(prepared.contains(&ran_in), "took the slow path: {ran_in:?} not in {prepared:?}");
}

/// The refill behind a session waits until the session's agent has started (its checkout and
/// setup would take the CPU and disk the agent's own start-up needs), and no longer than that.
#[tokio::test(flavor = "multi_thread")]
async fn the_pool_refills_once_the_sessions_agent_has_started() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let mut config = config(dir.path());
    // An agent that starts but never says so (no `system/init`), until it is stopped.
    config.agents.sim_program = PathBuf::from("/bin/sh");
    config.agents.sim_prefix = vec!["-c".into(), "exec sleep 600".into(), "agent".into()];
    let host = pooled_host(config).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;

    let session = host.new_session(new_session(&id, "say hi"), "test").await.unwrap();
    host.tend_pools_now().await;
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        assert_eq!(pool(&host, &id).await.ready, 1, "refilled while the agent was starting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its run ends: the hold ends with it.
    host.stop(&session.session_id).await.unwrap();
    wait_pool(&host, &id, "refilled", |p| p.ready == 2).await;
}

/// A clean pooled worktree's first turn starts from its base commit's tree (recorded without
/// reading the worktree), and the turn's diff is what the agent did, nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn a_pooled_sessions_first_turn_starts_from_its_base_tree() {
    let dir = shm_dir();
    let root = repo(dir.path());
    let host = pooled_host(config(dir.path())).await;
    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let id = project.project_id.clone();
    wait_pool(&host, &id, "full", |p| p.ready == 2).await;
    let session =
        host.new_session(new_session(&id, "write notes.txt containing hi"), "test").await.unwrap();
    let sid = session.session_id.clone();
    crate::support::approve_until_turn_done(&host, &sid).await;
    // The start is recorded off the start's path, before the turn's end (which waits for it).
    let deadline = Instant::now() + Duration::from_secs(20);
    let facts = loop {
        let facts = host.git_facts_of_turn(&sid, false, Some(1)).await.unwrap();
        if facts.turns.iter().any(|t| t.turn == 1 && t.ended_at.is_some()) {
            break facts;
        }
        assert!(Instant::now() < deadline, "turn 1 never ended: {facts:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let start = git(&root, &["rev-parse", &format!("refs/nucleic/turns/{sid}/1-start")]);
    assert_eq!(start.trim(), git(&root, &["rev-parse", "HEAD^{tree}"]).trim());
    let files: Vec<&str> = facts.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["notes.txt"], "{facts:?}");
}
