//! Worktree lifecycle: create (with copied files and setup), continue, list, prune and discard.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{GitError, Result};
use crate::provision::{PlannedCopy, SetupSpec, copy_planned, plan_copies, run_setup};
use crate::repo::Repo;
use crate::runner::{git, nul_fields, path_of, text_of};
use crate::snapshot::{Author, snapshot_commit};

/// Directory under the main checkout's root that holds the worktrees (`<root>/.nucleic/worktrees`).
pub const WORKTREES_DIR: &str = ".nucleic/worktrees";
/// Prefix of every worktree branch: slug `fix-login` gets branch `nucleic/fix-login`.
pub const BRANCH_PREFIX: &str = "nucleic/";
/// The line added to `<git-common-dir>/info/exclude` so worktrees never show up as untracked.
const EXCLUDE_LINE: &str = ".nucleic/";

/// What [`Repo::create_worktree`] should create.
#[derive(Debug, Clone)]
pub struct WorktreeSpec {
    /// Names the directory and branch; must match `[a-z0-9][a-z0-9-]{0,62}`.
    pub slug: String,
    /// Where the branch starts: any ref or SHA; resolved once and recorded as `base_sha`.
    pub base_ref: String,
    /// Relative paths (typically gitignored, like `.env`) copied from the main checkout when
    /// they exist there. Absolute paths and `..` are refused with [`GitError::PathEscape`].
    pub copy_files: Vec<PathBuf>,
    /// Run after the copy; a failure or timeout leaves the worktree in place.
    pub setup: Option<SetupSpec>,
}

/// A worktree owned by a session: its own directory and branch, cut from a recorded base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    pub path: PathBuf,
    /// Short branch name (`nucleic/<slug>`).
    pub branch: String,
    /// The ref the caller asked to start from, as given.
    pub base_ref: String,
    /// What `base_ref` resolved to when the worktree was created; diffs are taken against it.
    pub base_sha: String,
}

/// One entry of `git worktree list` (the main checkout comes first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeEntry {
    pub path: PathBuf,
    /// The checked-out commit (`None` for a bare entry or an unborn branch).
    pub head: Option<String>,
    /// Short branch name; `None` when detached.
    pub branch: Option<String>,
    pub locked: bool,
    /// Git considers it stale (its directory is gone); [`Repo::prune`] drops it.
    pub prunable: bool,
}

impl Repo {
    /// Creates `<root>/.nucleic/worktrees/<slug>` on a new branch `nucleic/<slug>` starting at
    /// `base_ref`, then copies `copy_files` and runs the setup script (see [`Repo::provision`]).
    /// Refuses an invalid slug, an existing branch or directory, and escaping copy paths before
    /// creating anything. A failing setup returns [`GitError::SetupFailed`] /
    /// [`GitError::SetupTimedOut`] and leaves the worktree for the caller to keep or discard.
    pub fn create_worktree(&self, spec: &WorktreeSpec) -> Result<Worktree> {
        validate_slug(&spec.slug)?;
        let copies = plan_copies(self.root(), &spec.copy_files)?;
        let base_sha = self.resolve(&spec.base_ref)?;
        let worktree = self.add_worktree(&spec.slug, &base_sha, &spec.base_ref, &base_sha)?;
        self.run_provision(&worktree, &copies, spec.setup.as_ref())?;
        Ok(worktree)
    }

    /// Copies `copy_files` from the main checkout into `worktree` (skipping missing sources and
    /// existing destinations, keeping file modes), then runs `setup` if given.
    pub fn provision(
        &self,
        worktree: &Worktree,
        copy_files: &[PathBuf],
        setup: Option<&SetupSpec>,
    ) -> Result<()> {
        let copies = plan_copies(self.root(), copy_files)?;
        self.run_provision(worktree, &copies, setup)
    }

    fn run_provision(
        &self,
        worktree: &Worktree,
        copies: &[PlannedCopy],
        setup: Option<&SetupSpec>,
    ) -> Result<()> {
        copy_planned(&worktree.path, copies)?;
        if let Some(setup) = setup {
            let env = [
                ("NUCLEIC_ROOT", self.root()),
                ("NUCLEIC_WORKTREE", worktree.path.as_path()),
                ("NUCLEIC_BRANCH", Path::new(&worktree.branch)),
            ];
            run_setup(&worktree.path, setup, &env)?;
        }
        Ok(())
    }

    /// Starts a new worktree `new_slug` from a kept one: its branch begins at the kept branch's
    /// tip plus the kept worktree's uncommitted and untracked work (committed with the user's
    /// identity as one extra commit on the new branch only; the kept branch does not move).
    /// `base_ref` and `base_sha` are inherited, so the new diff covers the whole line of work.
    /// Files are not copied and no setup runs; call [`Repo::provision`] for that.
    pub fn continue_from(&self, kept: &Worktree, new_slug: &str) -> Result<Worktree> {
        validate_slug(new_slug)?;
        require_present(kept)?;
        let message = format!("Uncommitted work from {}", kept.branch);
        let start = snapshot_commit(&kept.path, &message, Author::User)?;
        self.add_worktree(new_slug, &start, &kept.base_ref, &kept.base_sha)
    }

    /// Removes the worktree (even with uncommitted work, even if locked) and deletes its
    /// branch. A worktree whose directory is already gone is pruned instead.
    pub fn discard(&self, worktree: &Worktree) -> Result<()> {
        let _guard = self.lock_mutations();
        if worktree.path.exists() {
            git(self.root())
                .args(["worktree", "remove", "--force", "--force"])
                .arg(&worktree.path)
                .run()?;
        } else {
            git(self.root()).args(["worktree", "prune"]).run()?;
        }
        if self.branch_exists(&worktree.branch)? {
            git(self.root()).args(["branch", "-D", "--end-of-options", &worktree.branch]).run()?;
        }
        Ok(())
    }

    /// Rolls back a kept worktree: the same as [`Repo::discard`], but only with
    /// `confirm == true` ([`GitError::NotConfirmed`] otherwise), because kept work is meant to
    /// survive until the user says otherwise.
    pub fn remove_kept(&self, worktree: &Worktree, confirm: bool) -> Result<()> {
        if !confirm {
            return Err(GitError::NotConfirmed { operation: "removing a kept worktree" });
        }
        self.discard(worktree)
    }

    /// All worktrees git knows, main checkout first (`git worktree list --porcelain -z`).
    pub fn list_worktrees(&self) -> Result<Vec<WorktreeEntry>> {
        let out =
            git(self.root()).args(["worktree", "list", "--porcelain", "-z"]).read_only().run()?;
        let mut entries = Vec::new();
        let mut current: Option<WorktreeEntry> = None;
        for field in nul_fields(&out) {
            let (key, value) = match field.iter().position(|b| *b == b' ') {
                Some(i) => (&field[..i], &field[i + 1..]),
                None => (field, &[][..]),
            };
            match key {
                b"worktree" => {
                    entries.extend(current.take());
                    current = Some(WorktreeEntry {
                        path: path_of(value),
                        head: None,
                        branch: None,
                        locked: false,
                        prunable: false,
                    });
                }
                _ => {
                    let Some(entry) = current.as_mut() else { continue };
                    match key {
                        b"HEAD" => entry.head = Some(text_of(value)),
                        b"branch" => {
                            let name = text_of(value);
                            let short = name.strip_prefix("refs/heads/").unwrap_or(&name);
                            entry.branch = Some(short.to_owned());
                        }
                        b"locked" => entry.locked = true,
                        b"prunable" => entry.prunable = true,
                        _ => {}
                    }
                }
            }
        }
        entries.extend(current);
        for entry in &mut entries {
            if entry.head.as_deref().is_some_and(|h| h.bytes().all(|b| b == b'0')) {
                entry.head = None;
            }
        }
        Ok(entries)
    }

    /// Forgets worktrees whose directories are gone (`git worktree prune`).
    pub fn prune(&self) -> Result<()> {
        let _guard = self.lock_mutations();
        git(self.root()).args(["worktree", "prune"]).run()?;
        Ok(())
    }

    /// `git worktree add -b nucleic/<slug> <root>/.nucleic/worktrees/<slug> <start>`.
    fn add_worktree(
        &self,
        slug: &str,
        start: &str,
        base_ref: &str,
        base_sha: &str,
    ) -> Result<Worktree> {
        validate_slug(slug)?;
        let branch = format!("{BRANCH_PREFIX}{slug}");
        let path = self.root().join(WORKTREES_DIR).join(slug);
        let _guard = self.lock_mutations();
        if self.branch_exists(&branch)? {
            return Err(GitError::BranchExists { branch });
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(GitError::PathExists { path });
        }
        self.ensure_excluded()?;
        git(self.root())
            .args(["worktree", "add", "--quiet", "-b", &branch])
            .arg(&path)
            .arg(start)
            .run()?;
        Ok(Worktree { path, branch, base_ref: base_ref.to_owned(), base_sha: base_sha.to_owned() })
    }

    /// Appends `.nucleic/` to `<git-common-dir>/info/exclude` unless a line already says so.
    fn ensure_excluded(&self) -> Result<()> {
        let info = self.common_dir().join("info");
        let exclude = info.join("exclude");
        let existing = match std::fs::read(&exclude) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(GitError::io("cannot read", &exclude, e)),
        };
        let present = existing.split(|b| *b == b'\n').any(|line| {
            let line = String::from_utf8_lossy(line);
            matches!(line.trim(), ".nucleic/" | "/.nucleic/" | ".nucleic" | "/.nucleic")
        });
        if present {
            return Ok(());
        }
        std::fs::create_dir_all(&info).map_err(|e| GitError::io("cannot create", &info, e))?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&exclude)
            .map_err(|e| GitError::io("cannot open", &exclude, e))?;
        let separator = if existing.is_empty() || existing.ends_with(b"\n") { "" } else { "\n" };
        writeln!(file, "{separator}{EXCLUDE_LINE}")
            .map_err(|e| GitError::io("cannot write", &exclude, e))
    }
}

/// Checks `slug` against `[a-z0-9][a-z0-9-]{0,62}`.
pub(crate) fn validate_slug(slug: &str) -> Result<()> {
    let bytes = slug.as_bytes();
    let valid = matches!(bytes.first(), Some(b'a'..=b'z' | b'0'..=b'9'))
        && bytes.len() <= 63
        && bytes.iter().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'));
    if valid { Ok(()) } else { Err(GitError::InvalidSlug { slug: slug.to_owned() }) }
}

/// [`GitError::WorktreeMissing`] unless the worktree's directory is a checkout.
pub(crate) fn require_present(worktree: &Worktree) -> Result<()> {
    if worktree.path.join(".git").exists() {
        Ok(())
    } else {
        Err(GitError::WorktreeMissing { path: worktree.path.clone() })
    }
}
