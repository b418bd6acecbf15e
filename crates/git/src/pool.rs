//! Warm worktrees: prepared ahead at a base commit under `<root>/.nucleic/pool/<name>`, checked,
//! moved to a new base tip touching only changed files, and handed to a session by renaming.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::disk::disk_usage;
use crate::error::{GitError, Result};
use crate::provision::{SetupSpec, plan_copies};
use crate::repo::{Repo, resolve_in};
use crate::runner::{Checkout, git, nul_fields, path_of};
use crate::worktree::{BRANCH_PREFIX, WORKTREES_DIR, Worktree, restore_gitlink, validate_slug};

/// Directory under the main checkout's root that holds pooled worktrees (`<root>/.nucleic/pool`).
pub const POOL_DIR: &str = ".nucleic/pool";
/// Prefix of a pooled worktree's placeholder branch: name `pool-1a2b` is on `nucleic-pool/pool-1a2b`.
pub const POOL_BRANCH_PREFIX: &str = "nucleic-pool/";

/// A worktree prepared ahead of any session: checked out at `base_sha`, copied files in place,
/// setup already run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PooledWorktree {
    /// Directory name under [`POOL_DIR`] and name of its admin dir; a valid slug.
    pub name: String,
    pub path: PathBuf,
    /// Placeholder branch (`nucleic-pool/<name>`), renamed when a session takes it.
    pub branch: String,
    /// The base branch it follows, as the project names it.
    pub base_ref: String,
    /// The commit it is checked out at.
    pub base_sha: String,
    /// Fingerprint of `git status` once prepared (setup output included): any later change to
    /// tracked or untracked files changes it.
    pub status: String,
    /// Bytes its files take on disk (allocated blocks), measured once prepared.
    pub disk_bytes: u64,
}

impl PooledWorktree {
    /// Whether its fingerprinted `git status` was empty: no change to tracked files and no
    /// untracked file outside `.gitignore` (its files are exactly `base_sha`'s tree, as far as
    /// a snapshot sees them).
    pub fn clean(&self) -> bool {
        self.status.starts_with("0:")
    }
}

impl Repo {
    /// Creates the pooled worktree `name` at `base_ref`'s tip on its placeholder branch, copies
    /// `copy_files` and runs `setup` there (see [`Repo::provision`]). A failing setup removes it
    /// again and returns the setup's error.
    pub fn create_pooled(
        &self,
        name: &str,
        base_ref: &str,
        copy_files: &[PathBuf],
        setup: Option<&SetupSpec>,
    ) -> Result<PooledWorktree> {
        validate_slug(name)?;
        let copies = plan_copies(self.root(), copy_files)?;
        let base_sha = self.resolve(base_ref)?;
        let branch = format!("{POOL_BRANCH_PREFIX}{name}");
        let path = self.root().join(POOL_DIR).join(name);
        {
            let admin = self.common_dir().join("worktrees").join(name);
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
            let added = git(self.main())
                .args(["worktree", "add", "--quiet", "-b", &branch])
                .arg(&path)
                .arg(&base_sha)
                .run();
            if let Err(e) = added {
                self.remove_pooled_locked(&path, &branch);
                return Err(e);
            }
        }
        let mut pooled = PooledWorktree {
            name: name.to_owned(),
            path,
            branch,
            base_ref: base_ref.to_owned(),
            base_sha,
            status: String::new(),
            disk_bytes: 0,
        };
        let prepared = self.pooled(&pooled).and_then(|checkout| {
            let as_worktree = Worktree {
                path: pooled.path.clone(),
                branch: pooled.branch.clone(),
                base_ref: pooled.base_ref.clone(),
                base_sha: pooled.base_sha.clone(),
            };
            self.run_provision(&as_worktree, &copies, setup)?;
            pooled.status = status_fingerprint(&checkout)?;
            Ok(())
        });
        if let Err(e) = prepared {
            self.discard_pooled(&pooled);
            return Err(e);
        }
        pooled.disk_bytes = disk_usage(&pooled.path);
        Ok(pooled)
    }

    /// Why `pooled` may not be handed out, if it may not: not registered where the host put it,
    /// HEAD not on its branch at `base_sha`, or files changed since it was prepared (a full
    /// `git status`; for a large repository this takes a while — run it in the background).
    pub fn check_pooled(&self, pooled: &PooledWorktree) -> Result<Option<String>> {
        if let Some(reason) = self.quick_check_pooled(pooled)? {
            return Ok(Some(reason));
        }
        let found = status_fingerprint(&self.pooled(pooled)?)?;
        if found != pooled.status {
            return Ok(Some(format!("files in {} changed", pooled.path.display())));
        }
        Ok(None)
    }

    /// The cheap part of [`Repo::check_pooled`] (one git process): registered, HEAD on its
    /// branch at `base_sha`.
    pub fn quick_check_pooled(&self, pooled: &PooledWorktree) -> Result<Option<String>> {
        let checkout = match self.pooled(pooled) {
            Ok(checkout) => checkout,
            Err(e @ (GitError::WorktreeMissing { .. } | GitError::WorktreeUnregistered { .. })) => {
                return Ok(Some(e.to_string()));
            }
            Err(e) => return Err(e),
        };
        let out = git(&checkout)
            .args(["rev-parse", "HEAD", "--symbolic-full-name", "HEAD"])
            .read_only()
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        let (sha, head) = (lines.next(), lines.next());
        let expected_ref = format!("refs/heads/{}", pooled.branch);
        if out.code != Some(0) || head != Some(expected_ref.as_str()) {
            return Ok(Some(format!("HEAD of {} left {}", pooled.path.display(), pooled.branch)));
        }
        if sha != Some(pooled.base_sha.as_str()) {
            return Ok(Some(format!(
                "HEAD of {} is not at {}",
                pooled.path.display(),
                pooled.base_sha
            )));
        }
        Ok(None)
    }

    /// Moves `pooled` to `new_sha` (its base's new tip) with `git reset --keep`, which rewrites
    /// only the files that differ between the two commits and refuses to lose local changes,
    /// then runs `setup` again when given. Returns it with its status fingerprint unknown (empty:
    /// see [`Repo::pooled_fingerprint`]) and the paths the move changed. On an error the caller
    /// should rebuild it. Costs what the change costs (and one read of the index), not what the
    /// repository's size does.
    pub fn refresh_pooled(
        &self,
        pooled: &PooledWorktree,
        new_sha: &str,
        setup: Option<&SetupSpec>,
    ) -> Result<(PooledWorktree, Vec<PathBuf>)> {
        let checkout = self.pooled(pooled)?;
        let new_sha = resolve_in(self.main(), new_sha)?;
        let names = git(self.main())
            .args(["diff", "--name-only", "-z", "--no-renames", &pooled.base_sha, &new_sha])
            .read_only()
            .run()?;
        let changed =
            nul_fields(&names).into_iter().map(|p| pooled.path.join(path_of(p))).collect();
        git(&checkout).args(["reset", "--quiet", "--keep", &new_sha]).run()?;
        let moved = PooledWorktree { base_sha: new_sha, status: String::new(), ..pooled.clone() };
        if let Some(setup) = setup {
            let as_worktree = Worktree {
                path: moved.path.clone(),
                branch: moved.branch.clone(),
                base_ref: moved.base_ref.clone(),
                base_sha: moved.base_sha.clone(),
            };
            self.run_provision(&as_worktree, &[], Some(setup))?;
        }
        Ok((moved, changed))
    }

    /// The fingerprint of `pooled`'s `git status` now (a full status: the caller knows nothing
    /// changed behind its back since it was last verified).
    pub fn pooled_fingerprint(&self, pooled: &PooledWorktree) -> Result<String> {
        status_fingerprint(&self.pooled(pooled)?)
    }

    /// Hands `pooled` to a session: after the quick check, its branch becomes `nucleic/<slug>`
    /// and its directory and admin dir `<root>/.nucleic/worktrees/<slug>` and
    /// `<common>/worktrees/<slug>` (renames: milliseconds whatever the repository's size).
    /// Refused like [`Repo::create_worktree`] when the slug, branch or paths are taken.
    pub fn claim_pooled(&self, pooled: &PooledWorktree, slug: &str) -> Result<Worktree> {
        validate_slug(slug)?;
        if let Some(reason) = self.quick_check_pooled(pooled)? {
            return Err(GitError::PoolStale { path: pooled.path.clone(), reason });
        }
        let old_admin = self.pooled(pooled)?.git_dir;
        let branch = format!("{BRANCH_PREFIX}{slug}");
        let path = self.root().join(WORKTREES_DIR).join(slug);
        let admin = self.common_dir().join("worktrees").join(slug);
        let _guard = self.lock_mutations();
        for taken in [&path, &admin] {
            if std::fs::symlink_metadata(taken).is_ok() {
                return Err(GitError::PathExists { path: taken.clone() });
            }
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| GitError::io("cannot create directory", parent, e))?;
        }
        // `branch -m` (no `-M`) refuses to replace a branch: asked why only when it failed
        // (one git process less on a session's start).
        let renamed = git(self.main())
            .args(["branch", "-m", "--end-of-options", &pooled.branch, &branch])
            .run();
        if let Err(e) = renamed {
            return Err(match self.branch_exists(&branch) {
                Ok(true) => GitError::BranchExists { branch },
                _ => e,
            });
        }
        rename(&pooled.path, &path)?;
        rename(&old_admin, &admin)?;
        write_file(&admin.join("gitdir"), &format!("{}\n", path.join(".git").display()))?;
        let worktree = Worktree {
            path,
            branch,
            base_ref: pooled.base_ref.clone(),
            base_sha: pooled.base_sha.clone(),
        };
        restore_gitlink(&self.session(&worktree)?)?;
        Ok(worktree)
    }

    /// The pooled worktrees git knows (directories under [`POOL_DIR`]), by name, whatever their
    /// state: a restarted host keeps those it recorded and removes the others.
    pub fn list_pooled(&self) -> Result<Vec<(String, PathBuf)>> {
        let dir = self.root().join(POOL_DIR);
        Ok(self
            .list_worktrees()?
            .into_iter()
            .filter(|entry| entry.path.parent() == Some(dir.as_path()))
            .filter_map(|entry| {
                let name = entry.path.file_name()?.to_str()?.to_owned();
                Some((name, entry.path))
            })
            .collect())
    }

    /// Removes a pooled worktree and its placeholder branch, whatever state it is in; failures
    /// are left for `git worktree prune` (nothing to report: it was never handed out).
    pub fn discard_pooled(&self, pooled: &PooledWorktree) {
        let _guard = self.lock_mutations();
        self.remove_pooled_locked(&pooled.path, &pooled.branch);
    }

    /// Removes the pooled worktree named `name` (found by [`Repo::list_pooled`]).
    pub fn discard_pooled_named(&self, name: &str) {
        if validate_slug(name).is_err() {
            return;
        }
        let path = self.root().join(POOL_DIR).join(name);
        let branch = format!("{POOL_BRANCH_PREFIX}{name}");
        let _guard = self.lock_mutations();
        self.remove_pooled_locked(&path, &branch);
    }

    fn remove_pooled_locked(&self, path: &Path, branch: &str) {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let _ = std::fs::remove_file(path);
            }
            Ok(_) => {
                let remove = ["worktree", "remove", "--force", "--force"];
                if git(self.main()).args(remove).arg(path).run().is_err() {
                    // Broken beyond git's help (its `.git` replaced, say): delete the files.
                    let _ = std::fs::remove_dir_all(path);
                }
            }
            Err(_) => {}
        }
        let _ = git(self.main()).args(["worktree", "prune"]).run();
        if self.branch_exists(branch).unwrap_or(false) {
            let _ = git(self.main()).args(["branch", "-D", "--end-of-options", branch]).run();
        }
    }

    /// Where git runs for a pooled worktree: exactly `<root>/.nucleic/pool/<name>` with the
    /// admin dir `<common>/worktrees/<name>` recording it.
    fn pooled(&self, pooled: &PooledWorktree) -> Result<Checkout> {
        let path = &pooled.path;
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(GitError::WorktreeMissing { path: path.clone() });
        }
        let admin = self.common_dir().join("worktrees").join(&pooled.name);
        let expected = self.root().join(POOL_DIR).join(&pooled.name);
        let canonical = std::fs::canonicalize(path).ok();
        if validate_slug(&pooled.name).is_err()
            || *path != expected
            || canonical.as_ref() != Some(path)
        {
            return Err(GitError::WorktreeUnregistered { path: path.clone(), admin });
        }
        self.registered(path, admin)
    }
}

/// A short fingerprint of `git status --porcelain=v2 -z` in `checkout` (FNV-1a of the output
/// and its length): equal before and after means no tracked or untracked file changed.
fn status_fingerprint(checkout: &Checkout) -> Result<String> {
    let out = git(checkout)
        .args(["status", "--porcelain=v2", "-z", "--ignore-submodules=none"])
        .args(["--untracked-files=normal"])
        .read_only()
        .run()?;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in &out {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    // `<length>:<hash>`: `PooledWorktree::clean` reads the length.
    Ok(format!("{}:{hash:016x}", out.len()))
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| GitError::io("cannot move", from, e))
}

/// Replaces `path` with a new file holding `text`, never writing through a symlink there.
fn write_file(path: &Path, text: &str) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(GitError::io("cannot replace", path, e));
        }
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| GitError::io("cannot write", path, e))
}
