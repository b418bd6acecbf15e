//! Finishing a worktree's work, only ever on an explicit request: commit it, and bring it into
//! the base branch by merge, squash or rebase without touching anyone's uncommitted work.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::diff::{TrialMerge, trial_merge};
use crate::error::{GitError, Result};
use crate::repo::{HeadState, Repo, head_state_in, is_dirty_in, resolve_in};
use crate::runner::{Checkout, git, nul_fields, path_of};
use crate::worktree::Worktree;

/// How [`Repo::merge_into_base`] brings the work in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishMode {
    /// A merge commit with two parents (base tip, worktree branch tip), even when a
    /// fast-forward would be possible.
    Merge,
    /// One new commit on the base tip with the merged tree; the branch's history is not kept.
    Squash,
    /// The branch's commits replayed onto the base tip (the worktree branch is rebased), then
    /// the base fast-forwarded to them.
    Rebase,
}

/// What finishing may do to a checkout that has the base branch checked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckoutPolicy {
    /// Refuse ([`GitError::BaseCheckedOut`]): no checkout's files change.
    Refuse,
    /// Fast-forward it when clean; refuse when it has changes to tracked files.
    FastForwardIfClean,
}

/// Where the base branch ended up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishOutcome {
    pub base_branch: String,
    pub previous_tip: String,
    pub new_tip: String,
    /// The checkout that had `base_branch` checked out (clean) and was fast-forwarded with it.
    pub updated_checkout: Option<PathBuf>,
}

impl Repo {
    /// Commits all uncommitted and untracked (not ignored) work in the worktree onto its
    /// branch. Returns the new commit, or `None` when there was nothing to commit. No hook
    /// runs and nothing is signed (like every host git call, see `docs/security.md`): this
    /// records an agent's work on request, it is not the user's own commit.
    pub fn commit_all(&self, worktree: &Worktree, message: &str) -> Result<Option<String>> {
        let dir = &self.session(worktree)?;
        require_on_branch(dir, worktree)?;
        git(dir).args(["add", "-A"]).run()?;
        let unchanged = ["diff", "--cached", "--quiet", "--no-ext-diff", "--no-textconv"];
        if git(dir).args(unchanged).check()? {
            return Ok(None);
        }
        git(dir)
            .args(["commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message])
            .run()?;
        resolve_in(dir, "HEAD").map(Some)
    }

    /// Brings the worktree branch into the local branch `base_branch` (`message` is the commit
    /// message for `Merge` and `Squash`; `Rebase` keeps the branch's own messages).
    ///
    /// The worktree must be clean ([`GitError::Dirty`]: call [`Repo::commit_all`] first) and on
    /// its branch. The result is computed without any checkout: `git merge-tree --write-tree`
    /// for the tree, `git commit-tree` for the commit (for `Rebase`, `git rebase` inside the
    /// worktree itself). The base ref is then moved as a compare-and-swap from the tip read at
    /// the start ([`GitError::BaseMoved`] if it changed meanwhile).
    ///
    /// When `base_branch` is checked out in some checkout (typically the user's main checkout),
    /// moving only the ref would leave that checkout's index and files at the old commit, so it
    /// would look like the inverse of the merge had been staged. Therefore:
    /// - if that checkout has changes to tracked files (staged or not), the call is refused with
    ///   [`GitError::BaseCheckedOutDirty`] before anything is written;
    /// - otherwise the checkout is fast-forwarded (`git merge --ff-only`, hooks off, no
    ///   autostash): only files the merge changed are rewritten, it stays clean, and untracked
    ///   files are kept (git refuses, and so does this call, if one would be overwritten).
    ///
    /// A checkout where `base_branch` is not checked out is never touched.
    ///
    /// On conflict the result is [`GitError::Conflict`] naming the files, and every ref, the
    /// worktree and the main checkout are as they were (a conflicting rebase is aborted).
    /// The caller must make sure the worktree's agent is not writing meanwhile.
    pub fn merge_into_base(
        &self,
        worktree: &Worktree,
        base_branch: &str,
        mode: FinishMode,
        message: &str,
    ) -> Result<FinishOutcome> {
        self.merge_into_base_with(
            worktree,
            base_branch,
            mode,
            message,
            CheckoutPolicy::FastForwardIfClean,
        )
    }

    /// [`Repo::merge_into_base`], choosing what happens to a checkout that has `base_branch`
    /// checked out: with [`CheckoutPolicy::Refuse`] the call fails with
    /// [`GitError::BaseCheckedOut`] before anything is written, so no checkout's files ever
    /// change unless the person asked for it.
    pub fn merge_into_base_with(
        &self,
        worktree: &Worktree,
        base_branch: &str,
        mode: FinishMode,
        message: &str,
        policy: CheckoutPolicy,
    ) -> Result<FinishOutcome> {
        let session = self.session(worktree)?;
        require_on_branch(&session, worktree)?;
        if is_dirty_in(&session, true)? {
            return Err(GitError::Dirty { path: worktree.path.clone() });
        }
        if !self.branch_exists(base_branch)? {
            return Err(GitError::UnknownRef { reference: base_branch.to_owned() });
        }
        let _guard = self.lock_mutations();
        let base_ref = format!("refs/heads/{base_branch}");
        let old = self.resolve(&base_ref)?;
        let tip = self.resolve(&format!("refs/heads/{}", worktree.branch))?;
        let nothing = || GitError::NothingToMerge {
            base_branch: base_branch.to_owned(),
            branch: worktree.branch.clone(),
        };
        if git(self.main()).args(["merge-base", "--is-ancestor", &tip, &old]).check()? {
            return Err(nothing());
        }
        let checkout = self.checkout_of(base_branch)?;
        if let Some(path) = &checkout
            && policy == CheckoutPolicy::Refuse
        {
            return Err(GitError::BaseCheckedOut {
                branch: base_branch.to_owned(),
                path: path.clone(),
            });
        }
        let checkout = checkout.map(|path| self.checkout_at(&path)).transpose()?;
        if let Some(checkout) = &checkout
            && is_dirty_in(checkout, false)?
        {
            return Err(GitError::BaseCheckedOutDirty {
                branch: base_branch.to_owned(),
                path: checkout.work_tree.clone(),
            });
        }
        let tree = match trial_merge(self.main(), &old, &tip)? {
            TrialMerge::Clean { tree } => tree,
            TrialMerge::Conflicts { files } => return Err(GitError::Conflict { files }),
        };
        let new = match mode {
            FinishMode::Merge => self.commit_tree(&tree, &[&old, &tip], message)?,
            FinishMode::Squash => {
                if tree == self.resolve_tree(&old)? {
                    return Err(nothing());
                }
                self.commit_tree(&tree, &[&old], message)?
            }
            FinishMode::Rebase => rebase_onto(&session, &old)?,
        };
        let reason = format!("nucleic: {mode:?} {} into {base_branch}", worktree.branch);
        let advanced = self.advance_branch(base_branch, &old, &new, checkout.as_ref(), &reason);
        if advanced.is_err() && mode == FinishMode::Rebase {
            // Put the worktree branch back where it was; the base did not move.
            git(&session).args(["reset", "--quiet", "--keep", &tip]).run()?;
        }
        advanced?;
        Ok(FinishOutcome {
            base_branch: base_branch.to_owned(),
            previous_tip: old,
            new_tip: new,
            updated_checkout: checkout.map(|c| c.work_tree),
        })
    }

    /// The checkout (main or linked, not stale) that has `branch` checked out, if any.
    fn checkout_of(&self, branch: &str) -> Result<Option<PathBuf>> {
        let entries = self.list_worktrees()?;
        Ok(entries
            .into_iter()
            .find(|e| !e.prunable && e.branch.as_deref() == Some(branch))
            .map(|e| e.path))
    }

    fn resolve_tree(&self, commit: &str) -> Result<String> {
        git(self.main()).args(["rev-parse", &format!("{commit}^{{tree}}")]).read_only().run_text()
    }

    /// A commit object (the user's identity, unsigned), no ref moved.
    fn commit_tree(&self, tree: &str, parents: &[&str], message: &str) -> Result<String> {
        let mut command = git(self.main()).args(["commit-tree", "--no-gpg-sign", tree]);
        for parent in parents {
            command = command.args(["-p", parent]);
        }
        command.args(["-m", message]).run_text()
    }

    /// Moves `branch` from `old` to `new` (a descendant of `old`). Not checked out anywhere:
    /// `git update-ref` with `old` as the expected value. Checked out in `checkout`: a
    /// fast-forward there, so its index and files follow the ref.
    fn advance_branch(
        &self,
        branch: &str,
        old: &str,
        new: &str,
        checkout: Option<&Checkout>,
        reason: &str,
    ) -> Result<()> {
        let moved = || GitError::BaseMoved { branch: branch.to_owned(), expected: old.to_owned() };
        let Some(checkout) = checkout else {
            let update = git(self.main()).args([
                "update-ref",
                "-m",
                reason,
                &format!("refs/heads/{branch}"),
                new,
                old,
            ]);
            let output = update.output()?;
            if output.code == Some(0) {
                return Ok(());
            }
            if self.resolve(&format!("refs/heads/{branch}")).ok().as_deref() != Some(old) {
                return Err(moved());
            }
            return Err(update.failure(output));
        };
        if resolve_in(checkout, "HEAD")? != old {
            return Err(moved());
        }
        let forward = git(checkout).args([
            "merge",
            "--ff-only",
            "--no-autostash",
            "--no-verify",
            "--quiet",
            "--no-stat",
            new,
        ]);
        let output = forward.output()?;
        if output.code == Some(0) {
            return Ok(());
        }
        if output.stderr.contains("would be overwritten") {
            return Err(GitError::BaseCheckedOutDirty {
                branch: branch.to_owned(),
                path: checkout.work_tree.clone(),
            });
        }
        Err(forward.failure(output))
    }
}

/// Rebases the branch checked out in `worktree` onto `onto` and returns its new tip. A
/// conflicting rebase is aborted and reported as [`GitError::Conflict`].
fn rebase_onto(worktree: &Checkout, onto: &str) -> Result<String> {
    let rebase = git(worktree).args([
        "rebase",
        "--quiet",
        "--no-autostash",
        "--no-update-refs",
        "--no-autosquash",
        "--no-verify",
        "--no-gpg-sign",
        onto,
    ]);
    let output = rebase.output()?;
    if output.code == Some(0) {
        return resolve_in(worktree, "HEAD");
    }
    // The rebase state lives in the worktree's own git dir (the host's, not a `.git` file's).
    let in_progress =
        ["rebase-merge", "rebase-apply"].iter().any(|name| worktree.git_dir.join(name).exists());
    if !in_progress {
        return Err(rebase.failure(output));
    }
    let unmerged = git(worktree)
        .args(["diff", "--name-only", "--diff-filter=U", "-z", "--no-ext-diff", "--no-textconv"])
        .run()?;
    let files = nul_fields(&unmerged).into_iter().map(path_of).collect();
    git(worktree).args(["rebase", "--abort"]).run()?;
    Err(GitError::Conflict { files })
}

/// [`GitError::Detached`] / [`GitError::WrongBranch`] unless the worktree is on its branch.
pub(crate) fn require_on_branch(checkout: &Checkout, worktree: &Worktree) -> Result<()> {
    match head_state_in(checkout)? {
        HeadState::Branch { name } if name == worktree.branch => Ok(()),
        HeadState::Branch { name } => Err(GitError::WrongBranch {
            path: worktree.path.clone(),
            expected: worktree.branch.clone(),
            found: name,
        }),
        HeadState::Detached { .. } => Err(GitError::Detached {
            path: worktree.path.clone(),
            expected: worktree.branch.clone(),
        }),
    }
}
