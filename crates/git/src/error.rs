//! Errors of git operations: failed git commands with their context, plus typed refusals.

use std::path::PathBuf;
use std::time::Duration;

/// A git operation failed or was refused.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` itself could not be started (not installed, not on `PATH`, …).
    #[error("cannot run git in {dir}: {source}")]
    Spawn {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A git command exited unsuccessfully; `code` is `None` when it died from a signal.
    #[error("`git {}` in {dir} failed (exit {}): {stderr}", args.join(" "), code_text(*code))]
    Command { dir: PathBuf, args: Vec<String>, code: Option<i32>, stderr: String },
    /// A git command ran past its deadline and was killed with everything it started.
    #[error("`git {}` in {dir} did not finish within {after:?} and was killed", args.join(" "))]
    TimedOut { dir: PathBuf, args: Vec<String>, after: Duration },
    /// A file-system step outside git failed.
    #[error("{context} {path}: {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The path is not inside a git working tree.
    #[error("{path} is not inside a git repository")]
    NotARepo { path: PathBuf },
    /// The path is a bare repository, which has no checkout to branch worktrees from.
    #[error("{path} is a bare repository")]
    BareRepo { path: PathBuf },
    /// A ref (branch, tag, SHA, …) does not name a commit.
    #[error("unknown ref `{reference}`")]
    UnknownRef { reference: String },
    /// A worktree slug does not match `[a-z0-9][a-z0-9-]{0,62}`.
    #[error("invalid worktree slug `{slug}` (expected [a-z0-9][a-z0-9-]{{0,62}})")]
    InvalidSlug { slug: String },
    /// The branch a new worktree would create already exists.
    #[error("branch `{branch}` already exists")]
    BranchExists { branch: String },
    /// The directory a new worktree would occupy already exists.
    #[error("worktree path {path} already exists")]
    PathExists { path: PathBuf },
    /// A file to copy is absolute or leaves its root (`..`, or a symlink pointing outside).
    #[error("path {path} escapes the checkout")]
    PathEscape { path: PathBuf },
    /// A file is larger than the caller reads.
    #[error("{path} is too large ({size} bytes; at most {max} are read)")]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    /// The worktree's directory is gone (deleted behind git's back, or already removed).
    #[error("worktree {path} is missing")]
    WorktreeMissing { path: PathBuf },
    /// The worktree's admin dir in the repository (`<common>/worktrees/<name>`) is missing, is
    /// not a plain directory, or records another worktree: git is not run on it.
    #[error(
        "worktree {path} is not registered with git at {admin} (missing, or it names another worktree)"
    )]
    WorktreeUnregistered { path: PathBuf, admin: PathBuf },
    /// The installed git lacks what the host relies on to run it safely.
    #[error("git {found} is too old: Nucleic needs git {needed} or later")]
    GitTooOld { found: String, needed: &'static str },
    /// The worktree has uncommitted or untracked changes and the operation needs it clean.
    #[error("worktree {path} has uncommitted changes (commit them first)")]
    Dirty { path: PathBuf },
    /// The worktree's HEAD is detached instead of on its branch.
    #[error("worktree {path} has a detached HEAD (expected branch `{expected}`)")]
    Detached { path: PathBuf, expected: String },
    /// The worktree's HEAD is on another branch than the one it was created with.
    #[error("worktree {path} is on branch `{found}` (expected `{expected}`)")]
    WrongBranch { path: PathBuf, expected: String, found: String },
    /// Merging would conflict in these files; nothing was changed.
    #[error("merge conflicts in {}", join_paths(files))]
    Conflict { files: Vec<PathBuf> },
    /// The base branch already contains everything the worktree branch has.
    #[error("nothing to merge: `{base_branch}` already contains `{branch}`")]
    NothingToMerge { base_branch: String, branch: String },
    /// The base branch moved while finishing (compare-and-swap failed); nothing was changed.
    #[error("branch `{branch}` moved during the operation (expected it at {expected})")]
    BaseMoved { branch: String, expected: String },
    /// The base branch is checked out in a checkout with uncommitted changes to tracked files
    /// (or changes the update would overwrite); nothing was changed.
    #[error("`{branch}` is checked out in {path}, which has local changes; commit or stash them")]
    BaseCheckedOutDirty { branch: String, path: PathBuf },
    /// The base branch is checked out in a checkout whose files the caller did not allow to be
    /// changed.
    #[error(
        "{branch} is checked out in {path}; its files are only updated when asked (update the checkout explicitly, or check out another branch there)"
    )]
    BaseCheckedOut { branch: String, path: PathBuf },
    /// A pooled worktree may not be handed out (moved, changed or broken since it was made).
    #[error("pooled worktree {path} cannot be used: {reason}")]
    PoolStale { path: PathBuf, reason: String },
    /// A destructive operation was called without its explicit confirmation.
    #[error("{operation} needs explicit confirmation")]
    NotConfirmed { operation: &'static str },
    /// The worktree's setup script exited unsuccessfully; the worktree was left in place.
    #[error("setup script failed (exit {}); see {log_path}", code_text(*code))]
    SetupFailed { log_path: PathBuf, code: Option<i32> },
    /// The worktree's setup script ran past its timeout and was killed with its process group;
    /// the worktree was left in place.
    #[error("setup script timed out after {timeout:?} and was killed; see {log_path}")]
    SetupTimedOut { log_path: PathBuf, timeout: Duration },
    /// The project has no remote to push to.
    #[error(
        "no remote to push to: the repository has no `remote.{name}.url` (add one with `git remote add {name} <url>`)"
    )]
    NoRemote { name: String },
    /// The remote's URL is not pushed to (its protocol, or a config rule rewriting it).
    #[error("will not push to `{url}`: {reason}")]
    RemoteRefused { url: String, reason: String },
    /// The remote refused the push (a hook, a protected branch, a non-fast-forward).
    #[error("the remote `{url}` rejected the push of `{branch}`: {message}")]
    PushRejected { url: String, branch: String, message: String },
}

/// Shorthand for results of this crate.
pub type Result<T, E = GitError> = std::result::Result<T, E>;

impl GitError {
    pub(crate) fn io(
        context: &'static str,
        path: &std::path::Path,
        source: std::io::Error,
    ) -> Self {
        GitError::Io { context, path: path.to_path_buf(), source }
    }
}

fn code_text(code: Option<i32>) -> String {
    code.map_or_else(|| "signal".to_owned(), |c| c.to_string())
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
