//! Git for session worktrees: create them, read their diffs, and finish their work on request.
//!
//! Every session gets its own worktree under `<root>/.nucleic/worktrees/<slug>` on a branch
//! `nucleic/<slug>` cut from a recorded base commit. [`Repo`] creates and lists them, reports
//! their [`Diff`] against the base (uncommitted and untracked work included), previews merge
//! conflicts, and — only when explicitly asked — commits, merges, squashes or rebases the work
//! into the base branch, or discards it.
//!
//! # Git CLI, not a library
//!
//! Everything that reads a worktree, merges or moves a branch runs the `git` executable (by
//! absolute path, counted: [`git_processes`]), through a single runner (`LC_ALL=C`,
//! `GIT_TERMINAL_PROMPT=0`, `core.quotepath=off`, `GIT_OPTIONAL_LOCKS=0` for queries, and
//! never the caller's `GIT_DIR`/`GIT_WORK_TREE`/`GIT_INDEX_FILE`), parsing `-z` porcelain output.
//! libgit2 (`git2`) does not refuse to clobber uncommitted files on checkout and lacks parts of
//! git's semantics (sparse checkout, hooks, config corner cases); gix cannot create worktrees,
//! merge or rebase. The CLI is the implementation users already trust with their repositories.
//! The one exception is pure object writing for turn snapshots: the trees of an index `git add`
//! wrote and the loose snapshot ref are written in-process (`index`, `objects`), so a snapshot
//! is one git process instead of three. Gitoxide was not taken for it: `gix-index` and
//! `gix-object` alone are 58 crates (`cargo tree`, 22 of them `gix-*`, some in versions the
//! workspace does not build), for what is a few hundred lines over `sha1`, `sha2` and `flate2`,
//! which the workspace already builds; and its index reader would be one more parser of a file
//! the agent can write (here the index is the host's own, seeded only from a checked copy).
//!
//! # Safety rules
//!
//! - Queries never write the index of any checkout: diffs and conflict previews stage the
//!   worktree into a temporary index (`GIT_INDEX_FILE`) and work on the resulting objects.
//! - Finishing never rewrites uncommitted work: the base branch is moved by compare-and-swap,
//!   and a checkout that has it checked out is only fast-forwarded when clean
//!   (see [`Repo::merge_into_base`]).
//! - Changes to shared repository state are serialized per repository.
//! - A session's worktree is hostile (its agent writes it, and the repository's config, hooks
//!   and attributes with it): every command names its git dir, common dir and work tree from
//!   the host's records, runs no program that configuration or attributes name, uses no
//!   transport, and — where Linux has Landlock — can execute nothing but git itself
//!   ([`exec_confinement`]).
//!
//! Calls are synchronous and spawn processes; call them from blocking threads.
//!
//! # Modules
//!
//! - `worktree`: the lifecycle of a [`Worktree`]: `.nucleic/worktrees/<slug>` on `nucleic/<slug>`
//!   with the base SHA recorded; create, continue, list, prune, discard, rollback.
//! - `provision`: copied gitignored files and setup scripts ([`SetupSpec`]) with a timeout that
//!   kills their process group.
//! - `diff`: diffs vs base including uncommitted and untracked work (via a temporary index, never
//!   the real one), ahead/behind, conflict preview (`merge-tree`).
//! - `snapshot`, `turns`: per-turn snapshots (trees kept by refs under
//!   `refs/nucleic/turns/<session>/`, never a commit) and the diff between two.
//! - `finish`: explicit finishing: merge / squash / rebase by compare-and-swap of the base ref (a
//!   checkout that has the base branch checked out is never changed unless the person asks —
//!   `updateCheckout` — and then only fast-forwarded when clean).
//! - `pool`: warm worktrees prepared ahead and handed to a session by renaming.
//! - `reclaim`, `disk`: a finished session's worktree directory reclaimed and brought back; what a
//!   worktree takes on disk.
//! - `repo`, `opened`: [`Repo`], opening a repository (kept for the process while nothing git
//!   read to find it changed) and its read-only facts.
//! - `index`, `objects`: turn snapshots' trees and refs written in-process from the index `git
//!   add` wrote (one git process per snapshot).
//! - `runner`: the one runner that starts every git process: it names the git dir, common dir and
//!   work tree from the host's records (never a `.git` file), locks configuration that runs
//!   programs (fsmonitor, hooks, signing, external diff, credential / ssh helpers), reads no
//!   `.gitattributes` and allows no transport.
//! - `push`: the one narrow exception to "no transport": pushing a session branch to the
//!   project's configured remote.
//! - `spawn`: git killed at a deadline and, with Landlock, allowed to execute nothing but git
//!   ([`exec_confinement`]; `docs/security.md`).
//! - `error`: [`GitError`].

mod diff;
mod disk;
mod error;
mod finish;
mod index;
mod objects;
mod opened;
mod pool;
mod provision;
mod push;
mod reclaim;
mod repo;
mod runner;
mod snapshot;
mod spawn;
mod turns;
mod worktree;

pub use diff::{AheadBehind, Diff, FileChange, FileStatus, WorktreeFacts};
pub use disk::{DiskUsage, disk_usage, measure as measure_disk};
pub use error::{GitError, Result};
pub use finish::{CheckoutPolicy, FinishMode, FinishOutcome};
pub use pool::{POOL_BRANCH_PREFIX, POOL_DIR, PooledWorktree};
pub use provision::SetupSpec;
pub use push::{DEFAULT_REMOTE, PushOutcome, Remote};
pub use repo::{HeadState, Repo};
pub use runner::GIT_DEADLINE;
pub use spawn::{ExecConfinement, exec_confinement, git_processes};
pub use turns::SNAPSHOT_REF_PREFIX;
pub use worktree::{BRANCH_PREFIX, WORKTREES_DIR, Worktree, WorktreeEntry, WorktreeSpec};
