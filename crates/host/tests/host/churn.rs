//! A short churn, like the memory bench's soak (`HOST_BENCH_PARTS=5 cargo bench -p nucleic-cli
//! --bench host`) but counting leaks, not time or RSS: sessions of the simulated agent under
//! keepers, four at a time, each created, run to its first turn's end and discarded, must leave
//! no per-session entry in the host, no worktree, branch, keeper or agent process, and no file
//! descriptor behind.

use std::path::Path;
use std::time::Duration;

use nucleic_host::{Host, KeeperSettings, Retained};
use nucleic_protocol::{EventKind, FinishAction};

use crate::support::nucleic;
use crate::support::{config, new_session, repo};

/// Sessions churned (the bench runs 1,000 to 10,000).
const SESSIONS: usize = 32;

async fn first_turn(host: &Host, id: &str) {
    let mut events = host.subscribe(id, 1).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(e) = events.next().await.unwrap() {
            if matches!(e.kind, EventKind::TurnCompleted(_)) {
                return;
            }
        }
        panic!("session {id}: the stream ended before its first turn did");
    })
    .await;
    assert!(waited.is_ok(), "session {id}: no turn end within 30 s");
}

fn git_lines(root: &Path, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("git").arg("-C").arg(root).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Live processes whose command line names `dir` (keepers name their directory in the home,
/// agents their worktree) or whose working directory is beneath it.
fn processes_naming(dir: &Path) -> Vec<String> {
    let needle = dir.as_os_str().as_encoded_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')))
            .unwrap_or(true);
        let inside =
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|d| d.starts_with(dir));
        if !zombie && (inside || cmdline.windows(needle.len()).any(|w| w == needle)) {
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_churned_sessions_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let mut config = config(dir.path());
    config.keepers = Some(KeeperSettings::new(nucleic()));
    config.limits.max_live_sessions = 8;
    let home = config.home.clone();
    let host = Host::open(config).await.unwrap();
    // Writers of idle sessions let go at once: discarding a session whose writer let go (and
    // the agent's end that reopens it) is part of every round.
    host.set_idle_release(Some(Duration::from_millis(1))).await;
    let project =
        host.add_project(root.to_str().unwrap(), None, |s| s.pool_size = 0).await.unwrap();

    let mut fds_after_first = None;
    for round in 0..SESSIONS / 4 {
        let mut ids = Vec::new();
        for _ in 0..4 {
            let s = host.new_session(new_session(&project.project_id, "say hi"), "test").await;
            ids.push(s.unwrap().session_id);
        }
        for id in &ids {
            first_turn(&host, id).await;
            host.finish(id, FinishAction::Discard, "test").await.unwrap();
        }
        // Descriptors the runtime and the catalog open once are there after the first round.
        if round == 0 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            fds_after_first = Some((open_fds(), alive_tasks()));
        }
    }

    // Retiring writers, releasing keepers and ending their tasks finish in the background:
    // everything must be gone within 20 s.
    let (fds_first, tasks_first) = fds_after_first.unwrap();
    let keeper_dirs = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(home.join("keepers"))
            .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    let left = || [processes_naming(&home), processes_naming(&root)].concat();
    let settled = || {
        host.retained().total() == 0
            && host.retained().agent_readers == 0
            && keeper_dirs().is_empty()
            && left().is_empty()
            && alive_tasks() <= tasks_first + 4
            && open_fds() <= fds_first + 4
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !settled() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let retained = host.retained();
    assert_eq!(
        retained,
        Retained { open_transcripts: retained.open_transcripts, ..Retained::default() },
        "the host holds nothing of a discarded session"
    );
    let worktrees = git_lines(&root, &["worktree", "list", "--porcelain"])
        .into_iter()
        .filter(|l| l.starts_with("worktree "))
        .count();
    assert_eq!(worktrees, 1, "only the main checkout is left");
    let branches =
        git_lines(&root, &["for-each-ref", "--format=%(refname)", "refs/heads/nucleic/"]);
    assert!(branches.is_empty(), "session branches left: {branches:?}");
    let snapshots = git_lines(&root, &["for-each-ref", "--format=%(refname)", "refs/nucleic/"]);
    assert!(snapshots.is_empty(), "turn snapshot refs left: {snapshots:?}");
    assert_eq!(keeper_dirs(), Vec::<std::path::PathBuf>::new(), "keeper directories left");
    assert_eq!(left(), Vec::<String>::new(), "keepers or agents left running");
    let fds = open_fds();
    assert!(
        fds <= fds_first + 4,
        "file descriptors grew from {fds_first} to {fds} over {SESSIONS} sessions"
    );
    // A task left per session (waiting on something that never comes) is memory that grows.
    let tasks = alive_tasks();
    assert!(
        tasks <= tasks_first + 4,
        "tasks grew from {tasks_first} to {tasks} over {SESSIONS} sessions"
    );
}
