//! Read-only facts about a worktree's work: its diff against the base (uncommitted and untracked
//! work included), ahead/behind counts, and which files would conflict when merged.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{GitError, Result};
use crate::repo::Repo;
use crate::runner::{Checkout, git, nul_fields, path_of, text_of};
use crate::snapshot::{Author, Snapshot, Unindexable, commit_of, snapshot, snapshot_commit};
use crate::worktree::Worktree;

/// Diff options of every diff the host computes: plain git, no external diff or textconv
/// program (the repository's config names those), renames detected.
const DIFF_OPTIONS: &[&str] = &["-r", "-M", "--no-ext-diff", "--no-textconv"];

/// Everything a worktree changed relative to its `base_sha`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    pub files: Vec<FileChange>,
    /// Unified diff text (rename detection on; binary files appear as "Binary files … differ").
    pub patch: String,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: PathBuf,
    /// The path before a rename or copy.
    pub old_path: Option<PathBuf>,
    pub status: FileStatus,
    /// Added lines (0 for binary files).
    pub additions: u64,
    /// Deleted lines (0 for binary files).
    pub deletions: u64,
    pub binary: bool,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// New and already added to the worktree's index or committed.
    Added,
    /// New and not yet known to git in the worktree (untracked, not ignored).
    Untracked,
    Modified,
    Deleted,
    Renamed,
    Copied,
    /// Changed kind (file ⇄ symlink ⇄ submodule).
    TypeChanged,
}

/// How far a worktree branch and a base branch have diverged (commits only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AheadBehind {
    /// Commits on the worktree branch that the base lacks.
    pub ahead: u64,
    /// Commits on the base that the worktree branch lacks.
    pub behind: u64,
}

/// What the cockpit shows of a worktree's work, read from one snapshot of its working tree:
/// [`Repo::diff`], [`Repo::ahead_behind`] and [`Repo::conflict_preview`] at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeFacts {
    pub diff: Diff,
    pub ahead_behind: AheadBehind,
    /// Files that would conflict when merged into the base branch's tip (empty: none).
    pub conflicts: Vec<PathBuf>,
    /// The snapshot of the working tree these facts were read from (a tree id).
    pub snapshot: String,
}

/// The result of a trial merge (`git merge-tree --write-tree`): nothing is checked out.
#[derive(Debug)]
pub(crate) enum TrialMerge {
    Clean { tree: String },
    Conflicts { files: Vec<PathBuf> },
}

impl Repo {
    /// The worktree's changes against its `base_sha`, including commits, staged, unstaged and
    /// untracked (not ignored) files. Built in a temporary index: neither the worktree's index nor
    /// the main checkout's is touched. [`GitError::WorktreeMissing`] if its directory is gone.
    pub fn diff(&self, worktree: &Worktree) -> Result<Diff> {
        let dir = &self.session(worktree)?;
        let snap = snapshot(dir, Unindexable::Skip)?;
        diff_of(dir, worktree, &snap)
    }

    /// [`Repo::diff`], [`Repo::ahead_behind`] and [`Repo::conflict_preview`] against
    /// `base_branch`, from a single snapshot of the working tree (fewer git processes).
    pub fn facts(&self, worktree: &Worktree, base_branch: &str) -> Result<WorktreeFacts> {
        let dir = &self.session(worktree)?;
        let snap = snapshot(dir, Unindexable::Skip)?;
        let diff = diff_of(dir, worktree, &snap)?;
        let base = self.resolve(base_branch)?;
        let ahead_behind = self.count_between(&base, &self.resolve(&worktree.branch)?)?;
        let work = commit_of(dir, &snap, "nucleic conflict preview", Author::Throwaway)?;
        let conflicts = match trial_merge(self.main(), &base, &work)? {
            TrialMerge::Clean { .. } => Vec::new(),
            TrialMerge::Conflicts { files } => files,
        };
        Ok(WorktreeFacts { diff, ahead_behind, conflicts, snapshot: snap.tree })
    }

    /// Commits the worktree branch has that `base_branch` lacks, and the other way round
    /// (`git rev-list --left-right --count`). Uncommitted work is not counted.
    pub fn ahead_behind(&self, worktree: &Worktree, base_branch: &str) -> Result<AheadBehind> {
        let base = self.resolve(base_branch)?;
        let tip = self.resolve(&worktree.branch)?;
        self.count_between(&base, &tip)
    }

    /// Commits only `tip` has (ahead) and only `base` has (behind).
    fn count_between(&self, base: &str, tip: &str) -> Result<AheadBehind> {
        let counts = git(self.main())
            .args(["rev-list", "--left-right", "--count", &format!("{base}...{tip}")])
            .read_only()
            .run_text()?;
        let mut numbers = counts.split_whitespace().map(str::parse::<u64>);
        match (numbers.next(), numbers.next()) {
            (Some(Ok(behind)), Some(Ok(ahead))) => Ok(AheadBehind { ahead, behind }),
            _ => Err(GitError::Command {
                dir: self.root().to_path_buf(),
                args: vec!["rev-list".into(), "--left-right".into(), "--count".into()],
                code: Some(0),
                stderr: format!("unexpected output {counts:?}"),
            }),
        }
    }

    /// Files that would conflict if the worktree's work, uncommitted and untracked files
    /// included, were merged into `base_branch`'s current tip. Empty when it merges cleanly.
    /// Uses a throwaway commit and `git merge-tree`: no ref, index or checkout changes.
    pub fn conflict_preview(&self, worktree: &Worktree, base_branch: &str) -> Result<Vec<PathBuf>> {
        let checkout = self.session(worktree)?;
        let base = self.resolve(base_branch)?;
        let work = snapshot_commit(&checkout, "nucleic conflict preview", Author::Throwaway)?;
        match trial_merge(self.main(), &base, &work)? {
            TrialMerge::Clean { .. } => Ok(Vec::new()),
            TrialMerge::Conflicts { files } => Ok(files),
        }
    }
}

/// The diff of `snap` (the working tree of `dir`) against the worktree's `base_sha`.
fn diff_of(dir: &Checkout, worktree: &Worktree, snap: &Snapshot) -> Result<Diff> {
    let mut diff = tree_diff(dir, &worktree.base_sha, &snap.tree)?;
    let untracked_out =
        git(dir).args(["ls-files", "--others", "--exclude-standard", "-z"]).read_only().run()?;
    let untracked: HashSet<PathBuf> = nul_fields(&untracked_out).into_iter().map(path_of).collect();
    for file in &mut diff.files {
        if file.status == FileStatus::Added && untracked.contains(&file.path) {
            file.status = FileStatus::Untracked;
        }
    }
    Ok(diff)
}

/// What changed from tree-ish `from` to `to` (object ids): files with counts, and the patch.
pub(crate) fn tree_diff(dir: &Checkout, from: &str, to: &str) -> Result<Diff> {
    let summary = git(dir)
        .arg("diff-tree")
        .args(DIFF_OPTIONS)
        .args(["--raw", "--numstat", "-z", from, to])
        .read_only()
        .run()?;
    let files = parse_raw_numstat(&summary);
    let patch =
        git(dir).arg("diff-tree").args(DIFF_OPTIONS).args(["-p", from, to]).read_only().run()?;
    Ok(Diff { files, patch: String::from_utf8_lossy(&patch).into_owned() })
}

/// Merges commits `ours` and `theirs` in memory (`git merge-tree --write-tree`), writing only
/// objects.
pub(crate) fn trial_merge(main: &Checkout, ours: &str, theirs: &str) -> Result<TrialMerge> {
    let command = git(main)
        .args(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs])
        .read_only();
    let output = command.output()?;
    let mut fields = nul_fields(&output.stdout).into_iter();
    match (output.code, fields.next()) {
        (Some(0), Some(tree)) => Ok(TrialMerge::Clean { tree: text_of(tree) }),
        (Some(1), Some(_)) => {
            let files = fields.filter(|f| !f.is_empty()).map(path_of).collect();
            Ok(TrialMerge::Conflicts { files })
        }
        _ => Err(command.failure(output)),
    }
}

/// Parses `git diff-tree -r -M --raw --numstat -z`: all raw records, then all numstat records.
fn parse_raw_numstat(out: &[u8]) -> Vec<FileChange> {
    let fields = nul_fields(out);
    let mut files = Vec::new();
    let mut figures: HashMap<PathBuf, (Option<u64>, Option<u64>)> = HashMap::new();
    let mut i = 0;
    while i < fields.len() {
        let field = fields[i];
        i += 1;
        if let Some(meta) = field.strip_prefix(b":") {
            let status_text = text_of(meta.rsplit(|b| *b == b' ').next().unwrap_or_default());
            let status = match status_text.chars().next() {
                Some('A') => FileStatus::Added,
                Some('D') => FileStatus::Deleted,
                Some('R') => FileStatus::Renamed,
                Some('C') => FileStatus::Copied,
                Some('T') => FileStatus::TypeChanged,
                _ => FileStatus::Modified,
            };
            let paired = matches!(status, FileStatus::Renamed | FileStatus::Copied);
            let (old_path, path) = if paired {
                let old = fields.get(i).map(|f| path_of(f));
                let new = fields.get(i + 1).map(|f| path_of(f));
                i += 2;
                (old, new)
            } else {
                i += 1;
                (None, fields.get(i - 1).map(|f| path_of(f)))
            };
            let Some(path) = path else { break };
            files.push(FileChange {
                path,
                old_path,
                status,
                additions: 0,
                deletions: 0,
                binary: false,
            });
        } else {
            let mut parts = field.splitn(3, |b| *b == b'\t');
            let added = parts.next().and_then(|p| text_of(p).parse().ok());
            let deleted = parts.next().and_then(|p| text_of(p).parse().ok());
            let path = match parts.next() {
                Some(p) if !p.is_empty() => Some(path_of(p)),
                _ => {
                    // A rename: old and new path follow as separate fields.
                    i += 2;
                    fields.get(i - 1).map(|f| path_of(f))
                }
            };
            if let Some(path) = path {
                figures.insert(path, (added, deleted));
            }
        }
    }
    for file in &mut files {
        if let Some((added, deleted)) = figures.get(&file.path) {
            file.binary = added.is_none() || deleted.is_none();
            file.additions = added.unwrap_or(0);
            file.deletions = deleted.unwrap_or(0);
        }
    }
    files
}
