//! Worktree lifecycle: create (with copied files and setup), continue, list, prune and discard.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{GitError, Result};
use crate::provision::{PlannedCopy, SetupSpec, copy_planned, plan_copies, run_setup};
use crate::repo::Repo;
use crate::runner::{Checkout, git, nul_fields, path_of, text_of};
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

    pub(crate) fn run_provision(
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
        let message = format!("Uncommitted work from {}", kept.branch);
        let start = snapshot_commit(&self.session(kept)?, &message, Author::User)?;
        self.add_worktree(new_slug, &start, &kept.base_ref, &kept.base_sha)
    }

    /// Removes the worktree (even with uncommitted work, even if locked) and deletes its
    /// branch. A worktree whose directory is already gone is pruned instead; one whose directory
    /// was replaced by a symlink loses the symlink only.
    pub fn discard(&self, worktree: &Worktree) -> Result<()> {
        let _guard = self.lock_mutations();
        let path = &worktree.path;
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                // Not the directory git made: delete the link, never what it points to.
                std::fs::remove_file(path).map_err(|e| GitError::io("cannot remove", path, e))?;
                git(self.main()).args(["worktree", "prune"]).run()?;
            }
            Ok(_) => {
                if let Ok(checkout) = self.session(worktree) {
                    // Git checks that the worktree's `.git` points back before removing it;
                    // the agent may have pointed it elsewhere, the host knows where it belongs.
                    restore_gitlink(&checkout)?;
                }
                let remove = ["worktree", "remove", "--force", "--force"];
                git(self.main()).args(remove).arg(path).run()?;
            }
            Err(_) => {
                git(self.main()).args(["worktree", "prune"]).run()?;
            }
        }
        if self.branch_exists(&worktree.branch)? {
            git(self.main()).args(["branch", "-D", "--end-of-options", &worktree.branch]).run()?;
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
        let list = || git(self.main()).args(["worktree", "list", "--porcelain", "-z"]).read_only();
        // `git worktree add` writes a new admin dir's files one by one, and a list running at
        // that moment fails ("failed to read …/worktrees/<name>/commondir") — with warm pools
        // filling in the background this happens. A few short, bounded retries, then the error.
        let mut attempt = 0;
        let out = loop {
            match list().run() {
                Err(e) if attempt < 10 && is_half_made_admin_dir(&e) => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => break other?,
            }
        };
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
        git(self.main()).args(["worktree", "prune"]).run()?;
        Ok(())
    }

    /// Where git runs for a session worktree: its directory as the host recorded it, and the
    /// admin dir git made for it when the host created it, `<common>/worktrees/<directory
    /// name>` — never what the worktree's `.git` file says (the agent can point that at any
    /// repository). [`GitError::WorktreeMissing`] when the directory is gone (or replaced by a
    /// symlink), [`GitError::WorktreeUnregistered`] when the admin dir does not record it.
    ///
    /// Only a worktree where the host creates them qualifies: exactly
    /// `<root>/.nucleic/worktrees/<slug>`, reached through no symlink.
    pub(crate) fn session(&self, worktree: &Worktree) -> Result<Checkout> {
        let path = &worktree.path;
        let missing = || GitError::WorktreeMissing { path: path.clone() };
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(missing());
        }
        let slug = path.file_name().and_then(|n| n.to_str()).ok_or_else(missing)?;
        let admin = self.common_dir().join("worktrees").join(slug);
        let expected = self.root().join(WORKTREES_DIR).join(slug);
        let canonical = std::fs::canonicalize(path).ok();
        if validate_slug(slug).is_err() || *path != expected || canonical.as_ref() != Some(path) {
            return Err(GitError::WorktreeUnregistered { path: path.clone(), admin });
        }
        self.registered(path, admin)
    }

    /// Where git runs for a checkout `git worktree list` reported: the main checkout, or the
    /// linked worktree whose admin dir in this repository records `path`.
    pub(crate) fn checkout_at(&self, path: &Path) -> Result<Checkout> {
        if path == self.root() {
            return Ok(self.main().clone());
        }
        let admins = self.common_dir().join("worktrees");
        let entries =
            std::fs::read_dir(&admins).map_err(|e| GitError::io("cannot list", &admins, e))?;
        for entry in entries.flatten() {
            if records(&entry.path(), path) {
                return self.registered(path, entry.path());
            }
        }
        Err(GitError::WorktreeUnregistered { path: path.to_path_buf(), admin: admins })
    }

    /// `admin` as the git dir of the work tree `path`, if it is a plain directory (not a
    /// symlink) whose `gitdir` file records `path`.
    pub(crate) fn registered(&self, path: &Path, admin: PathBuf) -> Result<Checkout> {
        let plain_dir = std::fs::symlink_metadata(&admin).is_ok_and(|m| m.is_dir());
        if !plain_dir || !records(&admin, path) {
            return Err(GitError::WorktreeUnregistered { path: path.to_path_buf(), admin });
        }
        Ok(Checkout {
            work_tree: path.to_path_buf(),
            git_dir: admin,
            common_dir: self.common_dir().to_path_buf(),
            empty_tree: self.main().empty_tree,
            deadline: self.main().deadline,
        })
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
        // Git names the admin dir after the directory, with a number added when that name
        // is taken; the host finds it by the name alone, so it must be free.
        let admin = self.common_dir().join("worktrees").join(slug);
        let _guard = self.lock_mutations();
        if self.branch_exists(&branch)? {
            return Err(GitError::BranchExists { branch });
        }
        for taken in [&path, &admin] {
            if std::fs::symlink_metadata(taken).is_ok() {
                return Err(GitError::PathExists { path: taken.clone() });
            }
        }
        self.ensure_excluded()?;
        git(self.main())
            .args(["worktree", "add", "--quiet", "-b", &branch])
            .arg(&path)
            .arg(start)
            .run()?;
        let worktree =
            Worktree { path, branch, base_ref: base_ref.to_owned(), base_sha: base_sha.to_owned() };
        if let Err(e) = self.session(&worktree) {
            // Not where the host will look for it: undo rather than record it.
            let remove = ["worktree", "remove", "--force", "--force"];
            let _ = git(self.main()).args(remove).arg(&worktree.path).run();
            let branch = ["branch", "-D", "--end-of-options", &worktree.branch];
            let _ = git(self.main()).args(branch).run();
            return Err(e);
        }
        Ok(worktree)
    }

    /// Appends `.nucleic/` to `<git-common-dir>/info/exclude` unless a line already says so.
    pub(crate) fn ensure_excluded(&self) -> Result<()> {
        let info = self.common_dir().join("info");
        let exclude = info.join("exclude");
        // The agent can write here: never follow a symlink it may have put in place.
        if std::fs::symlink_metadata(&exclude).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(GitError::PathEscape { path: exclude });
        }
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

/// Makes the worktree's `.git` the gitlink git wrote (`gitdir: <admin dir>`), replacing whatever
/// the agent put there (a file, a symlink, a directory) without following it.
pub(crate) fn restore_gitlink(checkout: &Checkout) -> Result<()> {
    let link = checkout.work_tree.join(".git");
    let wanted = format!("gitdir: {}\n", checkout.git_dir.display());
    let found = std::fs::symlink_metadata(&link);
    if found.as_ref().is_ok_and(|m| m.is_file())
        && std::fs::read_to_string(&link).is_ok_and(|text| text == wanted)
    {
        return Ok(());
    }
    let removed = match found {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&link),
        Ok(_) => std::fs::remove_file(&link),
        Err(_) => Ok(()),
    };
    removed.map_err(|e| GitError::io("cannot replace", &link, e))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&link)
        .and_then(|mut file| file.write_all(wanted.as_bytes()))
        .map_err(|e| GitError::io("cannot write", &link, e))
}

/// Whether the admin dir's `gitdir` file records the work tree `path` (`<path>/.git`, absolute
/// or relative to the admin dir).
fn records(admin: &Path, path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(admin.join("gitdir")) else { return false };
    let recorded = admin.join(text.trim_end_matches(['\n', '\r']));
    if recorded == path.join(".git") {
        return true;
    }
    let real = |p: &Path| std::fs::canonicalize(p).ok();
    recorded.parent().and_then(real).is_some_and(|r| Some(r) == real(path))
}

/// A `git worktree list` failure caused by another worktree's admin dir being written right then.
fn is_half_made_admin_dir(error: &GitError) -> bool {
    let text = error.to_string();
    text.contains("failed to read") && text.contains("/worktrees/")
}
