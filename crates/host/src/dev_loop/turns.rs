//! The diff view: a session's whole change vs its base, or the change of one turn, read from
//! snapshots of the worktree the host takes at every turn boundary (trees kept by refs under
//! `refs/nucleic/turns/<session>/`, never a commit on the person's behalf).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use nucleic_git::{Repo, Worktree};
use nucleic_protocol::{DiffFile, GitFacts, TurnSnapshot};
use serde::{Deserialize, Serialize};

use crate::clock::now;
use crate::context::Context;
use crate::error::{HostError, blocking};

/// `sessions/<id>/turns.json`: the snapshots of each turn.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct TurnLog {
    pub(crate) turns: Vec<TurnRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TurnRecord {
    pub(crate) turn: u32,
    /// Tree of the worktree when the prompt was sent.
    pub(crate) start: String,
    pub(crate) started_at: i64,
    /// Tree when the turn completed (or when the next prompt was sent, if it never did).
    #[serde(default)]
    pub(crate) end: Option<String>,
    #[serde(default)]
    pub(crate) ended_at: Option<i64>,
}

/// Which boundary of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Boundary {
    Start,
    End,
}

/// A session's worktree as the host recorded it, and its project's root.
pub(crate) struct SessionWorktree {
    pub root: PathBuf,
    pub worktree: Worktree,
    pub base_branch: String,
}

impl Context {
    /// The session's worktree; a clear error when it has none or it is gone.
    pub(crate) async fn session_worktree(&self, id: &str) -> Result<SessionWorktree, HostError> {
        let row = self.session_row(id).await?;
        let info = row
            .worktree
            .clone()
            .ok_or_else(|| HostError::Invalid(format!("session {id} has no worktree")))?;
        let root = match &row.project_id {
            Some(p) => PathBuf::from(self.project(p).await?.root),
            None => return Err(HostError::Invalid(format!("session {id} belongs to no project"))),
        };
        if !Path::new(&info.path).is_dir() {
            let path = PathBuf::from(&info.path);
            return Err(nucleic_git::GitError::WorktreeMissing { path }.into());
        }
        Ok(SessionWorktree {
            root,
            base_branch: info.base_ref.clone(),
            worktree: crate::worktrees::disk::worktree_from(&info),
        })
    }

    /// The session worktree's diff vs its base, ahead/behind, and conflict preview (read-only).
    pub async fn git_facts(&self, id: &str, include_patch: bool) -> Result<GitFacts, HostError> {
        self.git_facts_of_turn(id, include_patch, None).await
    }

    /// [`Context::git_facts`] — or, with `turn`, what that turn changed (its start snapshot to its
    /// end) — and the turns that have snapshots.
    pub async fn git_facts_of_turn(
        &self,
        id: &str,
        include_patch: bool,
        turn: Option<u32>,
    ) -> Result<GitFacts, HostError> {
        let SessionWorktree { root, worktree, base_branch } = self.session_worktree(id).await?;
        // A snapshot in flight (a first turn's start is recorded just after its prompt went
        // out) lands first: a turn that has begun always has its start here.
        let log = {
            let _settled = self.no_snapshots(id).await;
            self.turn_log(id).await?
        };
        let span = match turn {
            None => None,
            Some(n) => {
                let Some(record) = log.turns.iter().find(|t| t.turn == n) else {
                    return Err(HostError::NotFound(format!(
                        "turn {n} of session {id} (it has {} with snapshots)",
                        log.turns.len()
                    )));
                };
                Some((record.start.clone(), record.end.clone()))
            }
        };
        let base = base_branch.clone();
        let info = worktree.clone();
        let (facts, diff) = blocking(move || {
            let repo = Repo::open(&root)?;
            let facts = repo.facts(&worktree, &base)?;
            let diff = match span {
                // A running turn: from its start to the worktree now.
                Some((start, end)) => {
                    Some(repo.diff_trees(&start, end.as_deref().unwrap_or(&facts.snapshot))?)
                }
                None => None,
            };
            Ok::<_, nucleic_git::GitError>((facts, diff))
        })
        .await
        .map_err(|e| match (turn, e) {
            (Some(n), HostError::Git(e)) => HostError::Invalid(format!(
                "the snapshots of turn {n} cannot be read (pruned from the repository?): {e}"
            )),
            (_, e) => e,
        })?;
        let snapshot = match turn.and_then(|n| log.turns.iter().find(|t| t.turn == n)) {
            Some(TurnRecord { end: Some(end), .. }) => end.clone(),
            _ => facts.snapshot.clone(),
        };
        let diff = diff.unwrap_or(facts.diff);
        Ok(GitFacts {
            base_branch,
            base_sha: info.base_sha,
            files: diff.files.iter().map(diff_file).collect(),
            patch: include_patch.then_some(diff.patch),
            ahead: facts.ahead_behind.ahead,
            behind: facts.ahead_behind.behind,
            conflicts: facts.conflicts.iter().map(|p| p.to_string_lossy().into_owned()).collect(),
            turn,
            turns: log.turns.iter().map(turn_snapshot).collect(),
            snapshot: Some(snapshot),
        })
    }

    /// Snapshots the worktree as a new turn starts (a prompt is about to be sent). Never fails
    /// the prompt: a session without a worktree has no snapshots, and a failure is logged.
    pub(crate) async fn turn_started(&self, id: &str) {
        self.turn_boundary(id, Boundary::Start, None).await;
    }

    /// The first turn's start of a session whose worktree holds exactly `commit`'s tree when
    /// given (a clean pooled worktree): that tree is recorded without reading the worktree,
    /// which on a large repository takes seconds of the CPU the agent's start-up needs.
    ///
    /// That tree does not depend on when it is read, so it is recorded off the start's path
    /// (the prompt goes out first: the CLI's own start-up waits for it), under the session's
    /// snapshot lock taken now, so that the turn's end and anything removing the worktree
    /// still come after it.
    pub(crate) async fn first_turn_started(&self, id: &str, commit: Option<String>) {
        let Some(commit) = commit else {
            return self.turn_boundary(id, Boundary::Start, None).await;
        };
        let held = self.no_snapshots(id).await;
        let (host, id) = (self.me.clone(), id.to_owned());
        tokio::spawn(async move {
            if let Some(host) = host.upgrade() {
                host.record_held(&id, Boundary::Start, Some(commit)).await;
            }
            drop(held);
        });
    }

    /// Snapshots the worktree as a turn completed.
    pub(crate) async fn turn_ended(&self, id: &str) {
        self.turn_boundary(id, Boundary::End, None).await;
    }

    async fn turn_boundary(&self, id: &str, boundary: Boundary, commit: Option<String>) {
        let _held = self.no_snapshots(id).await;
        self.record_held(id, boundary, commit).await;
    }

    /// Records a boundary, the session's snapshot lock held by the caller. Never fails: a
    /// session without a worktree has no snapshots, and a failure is logged.
    async fn record_held(&self, id: &str, boundary: Boundary, commit: Option<String>) {
        if !self.turn_snapshots.load(Ordering::Relaxed) {
            return;
        }
        let Ok(place) = self.session_worktree(id).await else { return };
        if let Err(e) = self.record_boundary(id, place, boundary, commit).await {
            eprintln!("nucleic: no turn snapshot for session {id}: {e}");
        }
    }

    /// Writes the boundary's snapshot and its entry in `turns.json` (the lock held).
    async fn record_boundary(
        &self,
        id: &str,
        place: SessionWorktree,
        boundary: Boundary,
        commit: Option<String>,
    ) -> Result<(), HostError> {
        let mut log = self.turn_log(id).await?;
        let (n, name) = match boundary {
            Boundary::Start => {
                let n = log.turns.last().map_or(1, |t| t.turn + 1);
                (n, format!("{n}-start"))
            }
            Boundary::End => match log.turns.iter().rev().find(|t| t.end.is_none()) {
                Some(open) => (open.turn, format!("{}-end", open.turn)),
                // A turn whose start was never recorded (the session predates snapshots).
                None => return Ok(()),
            },
        };
        let key = id.to_owned();
        let SessionWorktree { root, worktree, .. } = place;
        let index = self.snapshot_index_path(id);
        // A turn starting on a worktree nothing touched since the last turn's end snapshot
        // starts from that tree: no git process, and the prompt does not wait for one.
        let taken = self.turn_watches.take(id);
        let host = self.me.clone();
        let session = id.to_owned();
        // The project's repository is kept open between boundaries (`Repo::open` asks git again
        // only when what it read changed), and the session's snapshot index is kept in the
        // host's own directory: at most one git process per boundary.
        // Watches are opened and closed here, on the blocking thread (`turn_watch.rs`).
        let tree = blocking(move || {
            let repo = Repo::open(&root)?;
            let unchanged = match boundary {
                Boundary::Start => crate::dev_loop::turn_watch::unchanged(taken),
                Boundary::End => {
                    drop(taken);
                    None
                }
            };
            if let Some(tree) = unchanged {
                return repo.record_tree(&tree, &key, &name);
            }
            // Watching starts before the worktree is read.
            let host = host.upgrade().filter(|_| boundary == Boundary::End);
            let watch = host.as_ref().and_then(|h| h.turn_watches.watch(&worktree.path));
            let tree = match commit {
                Some(commit) if n == 1 => repo.record_commit_tree(&commit, &key, &name)?,
                _ => repo.record_snapshot_kept(&worktree, &key, &name, &index)?,
            };
            if let (Some(host), Some(watch)) = (host, watch) {
                drop(host.turn_watches.keep(&session, tree.clone(), watch));
            }
            Ok::<_, nucleic_git::GitError>(tree)
        })
        .await?;
        let at = now().unix_millis();
        match boundary {
            Boundary::Start => {
                // A turn that never completed (interrupted, the host restarted) ends here.
                for open in log.turns.iter_mut().filter(|t| t.end.is_none()) {
                    open.end = Some(tree.clone());
                    open.ended_at = Some(at);
                }
                log.turns.push(TurnRecord {
                    turn: n,
                    start: tree,
                    started_at: at,
                    end: None,
                    ended_at: None,
                });
            }
            Boundary::End => {
                if let Some(open) = log.turns.iter_mut().find(|t| t.turn == n) {
                    open.end = Some(tree);
                    open.ended_at = Some(at);
                }
            }
        }
        self.save_turn_log(id, &log).await
    }

    /// Deletes a session's snapshots (its worktree is gone: discarded or rolled back).
    pub(crate) async fn drop_turn_snapshots(&self, id: &str, root: PathBuf) {
        let key = id.to_owned();
        let dropped = blocking(move || Repo::open(&root)?.drop_snapshots(&key)).await;
        if let Err(e) = dropped {
            eprintln!("nucleic: cannot delete the turn snapshots of session {id}: {e}");
        }
        let lock = self.review_locks.of(id);
        let _held = lock.lock().await;
        let watch = self.turn_watches.take(id);
        let _ = blocking(move || {
            drop(watch);
            Ok::<_, HostError>(())
        })
        .await;
        let _ = std::fs::remove_file(self.turns_path(id));
        let _ = std::fs::remove_file(self.snapshot_index_path(id));
    }

    /// Whether turn boundaries are snapshotted (on unless switched off): for measuring what
    /// snapshots cost. Turns that run with them off have no per-turn diff.
    pub fn set_turn_snapshots(&self, on: bool) {
        self.turn_snapshots.store(on, Ordering::Relaxed);
    }

    fn turns_path(&self, id: &str) -> PathBuf {
        self.config.transcript_path(id).with_file_name("turns.json")
    }

    /// `sessions/<id>/snapshot.index`: the git index the session's turn snapshots are written
    /// through, kept from one boundary to the next so only changed files are hashed. In the
    /// host's own 0700 directory, where the agent cannot plant entries in it.
    fn snapshot_index_path(&self, id: &str) -> PathBuf {
        self.config.transcript_path(id).with_file_name("snapshot.index")
    }

    async fn turn_log(&self, id: &str) -> Result<TurnLog, HostError> {
        read_json(&self.turns_path(id)).await
    }

    async fn save_turn_log(&self, id: &str, log: &TurnLog) -> Result<(), HostError> {
        write_json(&self.turns_path(id), log).await
    }
}

/// A host-kept JSON file, or its default when there is none yet.
pub(crate) async fn read_json<T>(path: &Path) -> Result<T, HostError>
where
    T: for<'de> Deserialize<'de> + Default + Send + 'static,
{
    let path = path.to_path_buf();
    blocking(move || match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| HostError::Invalid(format!("{} is damaged: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(HostError::Invalid(format!("cannot read {}: {e}", path.display()))),
    })
    .await
}

/// Replaces a host-kept JSON file atomically, 0600.
pub(crate) async fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), HostError> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| HostError::Invalid(format!("cannot encode {}: {e}", path.display())))?;
    let path = path.to_path_buf();
    blocking(move || {
        crate::lifecycle::private::write_private_file(&path, &bytes)
            .map_err(|e| HostError::Invalid(format!("cannot write {}: {e}", path.display())))
    })
    .await
}

pub(crate) fn turn_snapshot(t: &TurnRecord) -> TurnSnapshot {
    TurnSnapshot { turn: t.turn, started_at: t.started_at, ended_at: t.ended_at }
}

pub(crate) fn diff_file(f: &nucleic_git::FileChange) -> DiffFile {
    DiffFile {
        path: f.path.to_string_lossy().into_owned(),
        old_path: f.old_path.as_ref().map(|p| p.to_string_lossy().into_owned()),
        status: serde_json::to_value(f.status)
            .ok()
            .and_then(|v| v.as_str().map(camel_case))
            .unwrap_or_default(),
        additions: f.additions,
        deletions: f.deletions,
        binary: f.binary,
    }
}

/// `type_changed` → `typeChanged`.
pub(crate) fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
