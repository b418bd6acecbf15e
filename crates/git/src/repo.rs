//! Opening a repository and the read-only facts about it: root, HEAD, branches, dirtiness.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};

use crate::error::{GitError, Result};
use crate::opened;
use crate::runner::{Checkout, GIT_DEADLINE, discover, empty_tree, git, require_git_version};

/// A non-bare repository, opened at the root of the checkout the user works in ("the main
/// checkout"). Cheap to clone; clones share the per-repository mutation lock.
///
/// Opening is the only time git discovers anything (from the root the user registered); every
/// later command names the git dir, common dir and work tree it found then.
#[derive(Debug, Clone)]
pub struct Repo {
    main: Checkout,
    mutations: Arc<Mutex<()>>,
}

/// Where a checkout's HEAD points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HeadState {
    /// On a branch (short name). The branch may be unborn (no commit yet).
    Branch { name: String },
    /// Detached at a commit.
    Detached { sha: String },
}

impl Repo {
    /// Opens the repository containing `path`. Its root is the canonical top level of the
    /// checkout `path` is in. Refuses paths outside any repository ([`GitError::NotARepo`]) and
    /// bare repositories ([`GitError::BareRepo`]).
    ///
    /// A repository opened at its root before is kept and handed out again, without a git
    /// process, while nothing discovery read has changed (`opened.rs` says what is compared).
    pub fn open(path: impl AsRef<Path>) -> Result<Repo> {
        let path = path.as_ref();
        if let Some(repo) = opened::lookup(path) {
            return Ok(repo);
        }
        let started = std::time::SystemTime::now();
        let repo = Repo::discover(path)?;
        opened::keep(path, &repo, started);
        Ok(repo)
    }

    /// Asks git where the checkout containing `path` is (see [`Repo::open`]).
    fn discover(path: &Path) -> Result<Repo> {
        if !path.is_dir() {
            return Err(GitError::NotARepo { path: path.to_path_buf() });
        }
        require_git_version()?;
        let probe = discover(path).args(["rev-parse", "--is-bare-repository"]).read_only();
        let output = probe.output()?;
        if output.code != Some(0) {
            if output.stderr.contains("not a git repository") {
                return Err(GitError::NotARepo { path: path.to_path_buf() });
            }
            return Err(probe.failure(output));
        }
        if String::from_utf8_lossy(&output.stdout).trim() == "true" {
            return Err(GitError::BareRepo { path: path.to_path_buf() });
        }
        let locate = discover(path)
            .args(["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"])
            .args(["--absolute-git-dir", "--show-object-format"])
            .read_only();
        let output = locate.output()?;
        if output.code != Some(0) {
            // Inside `.git` itself: a repository, but no checkout to work from.
            return Err(GitError::NotARepo { path: path.to_path_buf() });
        }
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut lines = text.lines();
        let (Some(root), Some(common_dir), Some(git_dir), Some(format)) =
            (lines.next(), lines.next(), lines.next(), lines.next())
        else {
            return Err(locate.failure(output));
        };
        let Some(empty_tree) = empty_tree(format) else {
            return Err(locate.failure(output));
        };
        let canonical = |p: &str, what| {
            std::fs::canonicalize(p).map_err(|e| GitError::io(what, Path::new(p), e))
        };
        let main = Checkout {
            work_tree: canonical(root, "cannot resolve repository root")?,
            git_dir: canonical(git_dir, "cannot resolve git dir")?,
            common_dir: canonical(common_dir, "cannot resolve git dir")?,
            empty_tree,
            deadline: GIT_DEADLINE,
        };
        let mutations = mutation_lock(&main.common_dir);
        Ok(Repo { main, mutations })
    }

    /// This repository with another limit on how long one git command may run
    /// (default [`GIT_DEADLINE`]); a command past it is killed ([`GitError::TimedOut`]).
    pub fn with_git_deadline(mut self, deadline: std::time::Duration) -> Repo {
        self.main.deadline = deadline;
        self
    }

    /// The canonical root of the main checkout.
    pub fn root(&self) -> &Path {
        &self.main.work_tree
    }

    /// The git directory shared by all worktrees (`git rev-parse --git-common-dir`).
    pub fn common_dir(&self) -> &Path {
        &self.main.common_dir
    }

    /// The main checkout, for git commands run there.
    pub(crate) fn main(&self) -> &Checkout {
        &self.main
    }

    /// The branch finished work goes into by default: the branch `origin/HEAD` points to (when
    /// a local branch of that name exists), else the main checkout's current branch, else
    /// `main` or `master` if they exist. `None` when none of these applies.
    pub fn default_branch(&self) -> Result<Option<String>> {
        let remote_head = git(&self.main)
            .args(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"])
            .read_only()
            .output()?;
        if remote_head.code == Some(0) {
            let target = String::from_utf8_lossy(&remote_head.stdout).trim().to_owned();
            if let Some(name) = target.strip_prefix("origin/")
                && self.branch_exists(name)?
            {
                return Ok(Some(name.to_owned()));
            }
        }
        if let HeadState::Branch { name } = self.head_state()? {
            return Ok(Some(name));
        }
        for name in ["main", "master"] {
            if self.branch_exists(name)? {
                return Ok(Some(name.to_owned()));
            }
        }
        Ok(None)
    }

    /// Where the main checkout's HEAD points.
    pub fn head_state(&self) -> Result<HeadState> {
        head_state_in(&self.main)
    }

    /// Whether the main checkout has staged, unstaged or untracked (not ignored) changes.
    pub fn is_dirty(&self) -> Result<bool> {
        is_dirty_in(&self.main, true)
    }

    /// The full SHA of the commit `reference` names ([`GitError::UnknownRef`] if none).
    pub fn resolve(&self, reference: &str) -> Result<String> {
        resolve_in(&self.main, reference)
    }

    /// Whether the local branch `name` (short name, without `refs/heads/`) exists.
    pub fn branch_exists(&self, name: &str) -> Result<bool> {
        git(&self.main)
            .args(["show-ref", "--verify", "--quiet", &format!("refs/heads/{name}")])
            .read_only()
            .check()
    }

    /// Local branches a session could start from, by most recent commit first; Nucleic's own
    /// session branches (`nucleic/…`) are left out.
    pub fn local_branches(&self) -> Result<Vec<String>> {
        let out = git(&self.main)
            .args([
                "for-each-ref",
                "--sort=-committerdate",
                "--format=%(refname:short)",
                "refs/heads/",
            ])
            .read_only()
            .run()?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .map(str::trim)
            .filter(|b| !b.is_empty() && !b.starts_with("nucleic/"))
            .map(str::to_owned)
            .collect())
    }

    /// Serializes changes to shared repository state (refs, worktree registry, exclude file):
    /// held by every mutating operation, across all [`Repo`]s opened on the same repository.
    pub(crate) fn lock_mutations(&self) -> MutexGuard<'_, ()> {
        self.mutations.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The lock shared by every [`Repo`] of the repository whose common git dir is `common_dir`.
fn mutation_lock(common_dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks =
        LOCKS.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
    locks.entry(common_dir.to_path_buf()).or_default().clone()
}

/// Where the HEAD of `checkout` points.
pub(crate) fn head_state_in(checkout: &Checkout) -> Result<HeadState> {
    let symbolic =
        git(checkout).args(["symbolic-ref", "--quiet", "--short", "HEAD"]).read_only().output()?;
    if symbolic.code == Some(0) {
        let name = String::from_utf8_lossy(&symbolic.stdout).trim().to_owned();
        return Ok(HeadState::Branch { name });
    }
    let sha = resolve_in(checkout, "HEAD")?;
    Ok(HeadState::Detached { sha })
}

/// Whether `checkout` has changes (`git status --porcelain=v2`); untracked files count only
/// when `with_untracked`.
pub(crate) fn is_dirty_in(checkout: &Checkout, with_untracked: bool) -> Result<bool> {
    let untracked =
        if with_untracked { "--untracked-files=normal" } else { "--untracked-files=no" };
    let status = git(checkout)
        .args(["status", "--porcelain=v2", "-z", "--ignore-submodules=none", untracked])
        .read_only()
        .run()?;
    Ok(!status.is_empty())
}

/// The full SHA of the commit `reference` names, resolved in `checkout`.
pub(crate) fn resolve_in(checkout: &Checkout, reference: &str) -> Result<String> {
    let unknown = || GitError::UnknownRef { reference: reference.to_owned() };
    if reference.is_empty() {
        return Err(unknown());
    }
    let query = git(checkout)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{reference}^{{commit}}"))
        .read_only();
    let output = query.output()?;
    match output.code {
        Some(0) => Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned()),
        Some(1) => Err(unknown()),
        _ if output.stderr.contains("Needed a single revision") => Err(unknown()),
        _ => Err(query.failure(output)),
    }
}
