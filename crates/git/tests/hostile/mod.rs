//! The agent's worktree is hostile: config, hooks, attributes, a promisor remote and a rewritten
//! `.git` that an agent plants must never run a program or redirect a host git call.
//!
//! Every planted program is a script that appends its name to a `fired` file; each host
//! operation runs with that file emptied first and must leave it empty.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nucleic_git::{ExecConfinement, FinishMode, GitError, Repo, Worktree, exec_confinement};

use crate::support::{Fixture, fixture, read, spec, write};

/// The empty tree (SHA-1): test-side git reads no in-tree attributes with it.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Hooks git can run; each is planted in the repository's hooks dir and in a `core.hooksPath`.
const HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-auto-gc",
    "post-rewrite",
    "reference-transaction",
    "post-index-change",
    "push-to-checkout",
];

/// Scripts an agent could plant; each appends its name (and arguments) to `fired` when run.
pub struct Traps {
    pub dir: PathBuf,
    fired: PathBuf,
}

impl Traps {
    pub fn new(base: &Path) -> Traps {
        let dir = base.join("traps");
        std::fs::create_dir_all(&dir).unwrap();
        Traps { fired: dir.join("fired"), dir }
    }

    /// A script `name` that records that it ran, then runs `then` (shell text).
    pub fn script(&self, name: &str, then: &str) -> String {
        self.script_in(&self.dir, name, then)
    }

    fn script_in(&self, dir: &Path, name: &str, then: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        let body = format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\n{then}\n", self.fired.display());
        write(&path, &body);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_str().unwrap().to_owned()
    }

    /// Every hook in `dir`, each recording itself as `<prefix><hook>`.
    pub fn hooks_in(&self, dir: &Path, prefix: &str) {
        for hook in HOOKS {
            let path = self.script_in(dir, hook, "exit 0");
            let body = read(Path::new(&path)).replacen(hook, &format!("{prefix}{hook}"), 1);
            write(Path::new(&path), &body);
        }
    }

    /// What ran since the last [`Traps::clear`], one line per run.
    pub fn fired(&self) -> Vec<String> {
        match std::fs::read_to_string(&self.fired) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(_) => Vec::new(),
        }
    }

    pub fn clear(&self) {
        let _ = std::fs::remove_file(&self.fired);
    }

    /// Runs one host operation with the log emptied first; fails the test if anything planted
    /// ran during it. Returns the operation's result for the caller to check.
    pub fn during<T>(&self, operation: &str, run: impl FnOnce() -> T) -> T {
        self.clear();
        let result = run();
        let fired = self.fired();
        assert!(fired.is_empty(), "planted programs ran during {operation}: {fired:#?}");
        result
    }
}

/// Git for the test's own setup: nothing planted runs (hooks, fsmonitor, attributes, signing
/// and transports are all switched off on the command line).
pub fn safe_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg(format!("--attr-source={EMPTY_TREE}"))
        .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"])
        .args(["-c", "commit.gpgSign=false", "-c", "diff.external="])
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_ALLOW_PROTOCOL", "")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
}

fn safe_commit(dir: &Path, name: &str, text: &str, message: &str) -> String {
    write(&dir.join(name), text);
    safe_git(dir, &["add", "--", name]);
    safe_git(dir, &["commit", "-q", "--no-verify", "-m", message]);
    safe_git(dir, &["rev-parse", "HEAD"])
}

pub fn set_config(file: &Path, key: &str, value: &str) {
    let out = Command::new("git")
        .args(["config", "--file"])
        .arg(file)
        .args([key, value])
        .output()
        .unwrap();
    assert!(out.status.success(), "git config {key}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Plants, in the repository's own config (which the agent can write: its commits write
/// objects there), every program-running setting, an include that turns on signing with a
/// planted gpg, and every hook.
fn plant_repository(f: &Fixture, traps: &Traps) {
    let config = f.root.join(".git/config");
    let set = |key: &str, value: &str| set_config(&config, key, value);
    set("core.fsmonitor", &traps.script("fsmonitor", "exit 1"));
    set("diff.external", &traps.script("diff-external", "exit 0"));
    set("diff.evil.textconv", &traps.script("textconv", "cat \"$1\""));
    set("diff.evil.command", &traps.script("diff-command", "exit 0"));
    set("filter.evil.clean", &traps.script("filter-clean", "cat"));
    set("filter.evil.smudge", &traps.script("filter-smudge", "cat"));
    set("merge.evil.driver", &format!("{} %O %A %B", traps.script("merge-driver", "exit 0")));
    set("core.pager", &traps.script("pager", "cat"));
    set("pager.diff", &traps.script("pager-diff", "cat"));
    set("core.editor", &traps.script("editor", "exit 0"));
    set("sequence.editor", &traps.script("sequence-editor", "exit 0"));
    set("core.sshCommand", &traps.script("ssh-command", "exit 1"));
    set("credential.helper", &traps.script("credential-helper", "exit 0"));
    set("core.alternateRefsCommand", &traps.script("alternate-refs", "exit 0"));
    set("core.askPass", &traps.script("askpass", "exit 1"));
    let included = traps.dir.join("included.config");
    set_config(&included, "commit.gpgSign", "true");
    set_config(&included, "tag.gpgSign", "true");
    set_config(&included, "gpg.program", &traps.script("gpg", "exit 1"));
    set_config(&included, "core.hooksPath", f.root.join(".git/hooks").to_str().unwrap());
    set("include.path", included.to_str().unwrap());
    traps.hooks_in(&f.root.join(".git/hooks"), "");
}

/// Plants what lives with the session worktree: a per-worktree config (enabled from the
/// repository config) with its own fsmonitor and hooks dir, and a `.gitattributes` in the
/// worktree naming the planted filter, diff and merge drivers for every file.
fn plant_worktree(f: &Fixture, wt: &Worktree, traps: &Traps) {
    set_config(&f.root.join(".git/config"), "extensions.worktreeConfig", "true");
    let admin = admin_dir(f, wt);
    let worktree_config = admin.join("config.worktree");
    set_config(&worktree_config, "core.fsmonitor", &traps.script("worktree-fsmonitor", "exit 1"));
    let hooks = traps.dir.join("worktree-hooks");
    traps.hooks_in(&hooks, "worktree-");
    set_config(&worktree_config, "core.hooksPath", hooks.to_str().unwrap());
    write(&wt.path.join(".gitattributes"), "* filter=evil diff=evil merge=evil\n");
}

pub fn admin_dir(f: &Fixture, wt: &Worktree) -> PathBuf {
    f.root.join(".git/worktrees").join(wt.path.file_name().unwrap())
}

/// A repository whose main branch already carries a `.gitattributes` naming the planted
/// drivers (an earlier session's merged work), with every repository-level trap planted, and a
/// session worktree (created with the traps in place) with worktree-level traps, committed and
/// uncommitted agent work, while main moved on in the same file (so merges merge contents).
pub struct Hostile {
    pub f: Fixture,
    pub traps: Traps,
    pub wt: Worktree,
}

pub fn hostile(slug: &str) -> Hostile {
    let f = fixture();
    safe_commit(&f.root, ".gitattributes", "*.txt filter=evil diff=evil merge=evil\n", "attrs");
    let traps = Traps::new(f.root.parent().unwrap());
    plant_repository(&f, &traps);
    let wt = traps.during("create_worktree", || f.repo.create_worktree(&spec(slug))).unwrap();
    plant_worktree(&f, &wt, &traps);
    safe_commit(&wt.path, "a.txt", "one\ntwo\nthree\nagent\n", "agent commit");
    write(&wt.path.join("b.txt"), "alpha\nbeta\nuncommitted\n");
    write(&wt.path.join("new.txt"), "untracked\n");
    safe_commit(&f.root, "a.txt", "ONE\ntwo\nthree\n", "main moves");
    Hostile { f, traps, wt }
}

/// Paths in the diff (a hostile `.gitattributes` is the agent's change too).
fn diff_paths(repo: &Repo, wt: &Worktree) -> Vec<String> {
    let diff = repo.diff(wt).unwrap();
    diff.files.iter().map(|c| c.path.to_string_lossy().into_owned()).collect()
}

#[test]
fn planted_programs_never_run_during_facts_queries_and_commit() {
    let Hostile { f, traps, wt } = hostile("facts");
    let repo = traps.during("Repo::open", || Repo::open(&f.root)).unwrap();
    let diff = traps.during("diff", || repo.diff(&wt)).unwrap();
    let paths: Vec<_> = diff.files.iter().map(|c| c.path.to_str().unwrap()).collect();
    assert_eq!(paths, [".gitattributes", "a.txt", "b.txt", "new.txt"]);
    assert!(diff.patch.contains("+uncommitted\n") && diff.patch.contains("+untracked\n"));
    let facts = traps.during("facts", || repo.facts(&wt, "main")).unwrap();
    assert_eq!(facts.diff, diff);
    assert_eq!((facts.ahead_behind.ahead, facts.ahead_behind.behind), (1, 1));
    let counts = traps.during("ahead_behind", || repo.ahead_behind(&wt, "main")).unwrap();
    assert_eq!((counts.ahead, counts.behind), (1, 1));
    let conflicts = traps.during("conflict_preview", || repo.conflict_preview(&wt, "main"));
    assert_eq!(conflicts.unwrap(), Vec::<PathBuf>::new());
    traps.during("is_dirty", || repo.is_dirty()).unwrap();
    traps.during("head_state", || repo.head_state()).unwrap();
    traps.during("default_branch", || repo.default_branch()).unwrap();
    traps.during("local_branches", || repo.local_branches()).unwrap();
    assert_eq!(traps.during("list_worktrees", || repo.list_worktrees()).unwrap().len(), 2);
    traps.during("prune", || repo.prune()).unwrap();
    let sha = traps.during("commit_all", || repo.commit_all(&wt, "agent work")).unwrap();
    assert_eq!(safe_git(&f.root, &["rev-parse", "nucleic/facts"]), sha.unwrap());
    assert_eq!(safe_git(&wt.path, &["status", "--porcelain"]), "");
}

#[test]
fn planted_programs_never_run_during_merge() {
    let Hostile { f, traps, wt } = hostile("merge");
    traps.during("commit_all", || f.repo.commit_all(&wt, "agent work")).unwrap();
    let outcome = traps
        .during("merge", || f.repo.merge_into_base(&wt, "main", FinishMode::Merge, "Merge"))
        .unwrap();
    assert_eq!(outcome.updated_checkout.as_deref(), Some(f.root.as_path()));
    assert_eq!(read(&f.root.join("a.txt")), "ONE\ntwo\nthree\nagent\n");
    assert_eq!(read(&f.root.join("new.txt")), "untracked\n");
}

#[test]
fn planted_programs_never_run_during_squash() {
    let Hostile { f, traps, wt } = hostile("squash");
    traps.during("commit_all", || f.repo.commit_all(&wt, "agent work")).unwrap();
    let outcome = traps
        .during("squash", || f.repo.merge_into_base(&wt, "main", FinishMode::Squash, "Squash"))
        .unwrap();
    assert_eq!(f.parents(&outcome.new_tip).len(), 1);
    assert_eq!(safe_git(&f.root, &["show", "main:a.txt"]), "ONE\ntwo\nthree\nagent");
}

#[test]
fn planted_programs_never_run_during_rebase() {
    let Hostile { f, traps, wt } = hostile("rebase");
    traps.during("commit_all", || f.repo.commit_all(&wt, "agent work")).unwrap();
    let outcome = traps
        .during("rebase", || f.repo.merge_into_base(&wt, "main", FinishMode::Rebase, "unused"))
        .unwrap();
    assert_eq!(safe_git(&f.root, &["rev-parse", "nucleic/rebase"]), outcome.new_tip);
    assert_eq!(safe_git(&f.root, &["show", "main:a.txt"]), "ONE\ntwo\nthree\nagent");
    assert_eq!(safe_git(&wt.path, &["status", "--porcelain"]), "");
}

#[test]
fn planted_programs_never_run_during_a_refused_rebase() {
    let Hostile { f, traps, wt } = hostile("midway");
    traps.during("commit_all", || f.repo.commit_all(&wt, "agent work")).unwrap();
    safe_commit(&f.root, "b.txt", "alpha\nMAIN\n", "main edits b");
    let result = traps
        .during("rebase", || f.repo.merge_into_base(&wt, "main", FinishMode::Rebase, "unused"));
    assert!(matches!(result, Err(GitError::Conflict { .. })), "{result:?}");
}

#[test]
fn planted_programs_never_run_during_continue_discard_and_rollback() {
    let Hostile { f, traps, wt } = hostile("kept");
    let next = traps.during("continue_from", || f.repo.continue_from(&wt, "next")).unwrap();
    assert_eq!(read(&next.path.join("new.txt")), "untracked\n");
    traps.during("diff of the continued worktree", || f.repo.diff(&next)).unwrap();
    traps.during("discard", || f.repo.discard(&next)).unwrap();
    assert!(!next.path.exists());
    traps.during("remove_kept", || f.repo.remove_kept(&wt, true)).unwrap();
    assert!(!wt.path.exists() && !f.repo.branch_exists("nucleic/kept").unwrap());
}

/// The agent points its worktree's `.git` at another repository that has its own planted
/// programs: host git calls keep working on the session's own worktree admin dir.
#[test]
fn a_rewritten_gitlink_never_redirects_host_git() {
    let Hostile { f, traps, wt } = hostile("gitlink");
    let before = diff_paths(&f.repo, &wt);
    let other = f.root.parent().unwrap().join("other");
    std::fs::create_dir(&other).unwrap();
    safe_git(&other, &["init", "-q", "-b", "main"]);
    safe_git(&other, &["config", "user.name", "Other"]);
    safe_git(&other, &["config", "user.email", "other@example.com"]);
    safe_commit(&other, "other.txt", "other\n", "other init");
    set_config(&other.join(".git/config"), "core.fsmonitor", &traps.script("other-fsm", "exit 1"));
    traps.hooks_in(&other.join(".git/hooks"), "other-");
    let other_state = || {
        let refs = safe_git(&other, &["for-each-ref", "--format=%(refname) %(objectname)"]);
        (refs, std::fs::read(other.join(".git/index")).unwrap())
    };
    let other_before = other_state();
    write(&wt.path.join(".git"), &format!("gitdir: {}\n", other.join(".git").display()));

    let diff = traps.during("diff", || f.repo.diff(&wt)).unwrap();
    let paths: Vec<_> = diff.files.iter().map(|c| c.path.to_string_lossy().into_owned()).collect();
    assert_eq!(paths, before, "the diff is still the session's own");
    traps.during("ahead_behind", || f.repo.ahead_behind(&wt, "main")).unwrap();
    traps.during("conflict_preview", || f.repo.conflict_preview(&wt, "main")).unwrap();
    let sha = traps.during("commit_all", || f.repo.commit_all(&wt, "agent work")).unwrap();
    assert_eq!(safe_git(&f.root, &["rev-parse", "nucleic/gitlink"]), sha.unwrap());
    traps
        .during("merge", || f.repo.merge_into_base(&wt, "main", FinishMode::Merge, "Merge"))
        .unwrap();
    assert_eq!(safe_git(&f.root, &["show", "main:new.txt"]), "untracked");
    assert_eq!(other_state(), other_before, "the other repository was never touched");
    traps.during("discard", || f.repo.discard(&wt)).unwrap();
    assert_eq!(other_state(), other_before);
}

/// A promisor remote with an `ext::` URL: a missing object would make git fetch it lazily,
/// running the remote's command. The host reports the missing object instead.
#[test]
fn a_planted_promisor_remote_is_never_fetched_from() {
    let Hostile { f, traps, wt } = hostile("promisor");
    let config = f.root.join(".git/config");
    set_config(&config, "core.repositoryFormatVersion", "1");
    set_config(&config, "extensions.partialClone", "origin");
    set_config(&config, "remote.origin.promisor", "true");
    set_config(&config, "protocol.ext.allow", "always");
    let fetch = traps.script("ext-transport", "exit 1");
    set_config(&config, "remote.origin.url", &format!("ext::{fetch} %S"));
    // The agent deletes an object the diff needs (the base's b.txt): git would fetch it.
    let blob = safe_git(&f.root, &["rev-parse", &format!("{}:b.txt", wt.base_sha)]);
    std::fs::remove_file(f.root.join(".git/objects").join(&blob[..2]).join(&blob[2..])).unwrap();

    let diff = traps.during("diff", || f.repo.diff(&wt));
    assert!(diff.is_err(), "a missing object is an error, not a fetch: {diff:?}");
}

/// The repository's `info/attributes` (which the agent can write, and which outranks every
/// `.gitattributes`) naming drivers defined in the repository's config: only exec confinement
/// stops those, so this test needs Landlock and says so when it is missing.
#[test]
fn drivers_named_in_info_attributes_never_run_under_confinement() {
    if let ExecConfinement::Unavailable(reason) = exec_confinement() {
        eprintln!("skipped: no exec confinement here ({reason})");
        return;
    }
    let Hostile { f, traps, wt } = hostile("info");
    let config = f.root.join(".git/config");
    set_config(&config, "filter.info.clean", &traps.script("info-clean", "cat"));
    set_config(&config, "filter.info.smudge", &traps.script("info-smudge", "cat"));
    set_config(&config, "diff.info.textconv", &traps.script("info-textconv", "cat \"$1\""));
    let driver = traps.script("info-merge", "exit 0");
    set_config(&config, "merge.info.driver", &format!("{driver} %O %A %B"));
    write(&f.root.join(".git/info/attributes"), "* filter=info diff=info merge=info\n");

    let diff = traps.during("diff", || f.repo.diff(&wt)).unwrap();
    assert!(diff.patch.contains("+uncommitted\n"));
    // A merge driver that cannot start leaves its file conflicted: nothing merges through it.
    let conflicts = traps.during("conflict_preview", || f.repo.conflict_preview(&wt, "main"));
    assert_eq!(conflicts.unwrap(), vec![PathBuf::from("a.txt")]);
    traps.during("commit_all", || f.repo.commit_all(&wt, "agent work")).unwrap();
    for mode in [FinishMode::Merge, FinishMode::Squash, FinishMode::Rebase] {
        let result = traps.during("finish", || f.repo.merge_into_base(&wt, "main", mode, "m"));
        assert!(matches!(result, Err(GitError::Conflict { .. })), "{mode:?}: {result:?}");
    }
}

/// What the host does when the agent breaks the worktree's link to git: a `.git` that is a
/// symlink or a directory, or a missing admin dir, is never followed.
#[test]
fn a_broken_gitlink_is_repaired_for_discard_and_a_missing_admin_dir_is_refused() {
    let Hostile { f, traps, wt } = hostile("broken");
    let elsewhere = f.root.parent().unwrap().join("elsewhere");
    write(&elsewhere.join("keep.txt"), "keep\n");
    std::fs::remove_file(wt.path.join(".git")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, wt.path.join(".git")).unwrap();
    traps.during("diff", || f.repo.diff(&wt)).unwrap();
    std::fs::remove_file(wt.path.join(".git")).unwrap();
    std::fs::create_dir(wt.path.join(".git")).unwrap();
    safe_git(&wt.path, &["init", "-q"]);
    traps.during("diff", || f.repo.diff(&wt)).unwrap();

    let admin = admin_dir(&f, &wt);
    let moved = admin.with_file_name("moved-away");
    std::fs::rename(&admin, &moved).unwrap();
    let refused = traps.during("diff", || f.repo.diff(&wt));
    assert!(matches!(refused, Err(GitError::WorktreeUnregistered { .. })), "{refused:?}");
    std::os::unix::fs::symlink(&moved, &admin).unwrap();
    let refused = traps.during("diff", || f.repo.diff(&wt));
    assert!(matches!(refused, Err(GitError::WorktreeUnregistered { .. })), "{refused:?}");
    std::fs::remove_file(&admin).unwrap();
    std::fs::rename(&moved, &admin).unwrap();

    traps.during("discard", || f.repo.discard(&wt)).unwrap();
    assert!(!wt.path.exists() && !f.repo.branch_exists("nucleic/broken").unwrap());
    assert_eq!(read(&elsewhere.join("keep.txt")), "keep\n", "the symlink target is untouched");
}

/// A session worktree directory replaced by a symlink (to a directory the agent prepared) is
/// not a session worktree: refused, and discard does not delete through it.
#[test]
fn a_worktree_replaced_by_a_symlink_is_refused() {
    let Hostile { f, traps, wt } = hostile("swapped");
    let real = f.root.parent().unwrap().join("real");
    std::fs::rename(&wt.path, &real).unwrap();
    std::os::unix::fs::symlink(&real, &wt.path).unwrap();
    let refused = traps.during("diff", || f.repo.diff(&wt));
    assert!(matches!(refused, Err(GitError::WorktreeMissing { .. })), "{refused:?}");
    let refused = traps.during("commit_all", || f.repo.commit_all(&wt, "m"));
    assert!(matches!(refused, Err(GitError::WorktreeMissing { .. })), "{refused:?}");
    let _ = traps.during("discard", || f.repo.discard(&wt));
    assert_eq!(read(&real.join("new.txt")), "untracked\n", "nothing deleted through the link");
}

/// A config `include.path` naming a FIFO no one writes to would block git forever while it
/// reads its configuration: every host git call has a deadline and is killed at it.
#[test]
fn a_planted_fifo_include_cannot_hang_host_git() {
    let Hostile { f, traps, wt } = hostile("fifo");
    let repo = f.repo.clone().with_git_deadline(Duration::from_millis(500));
    let fifo = traps.dir.join("config.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    set_config(&f.root.join(".git/config"), "include.path", fifo.to_str().unwrap());
    let started = Instant::now();
    let result = traps.during("diff", || repo.diff(&wt));
    assert!(matches!(result, Err(GitError::TimedOut { .. })), "{result:?}");
    let result =
        traps.during("merge", || repo.merge_into_base(&wt, "main", FinishMode::Merge, "m"));
    assert!(matches!(result, Err(GitError::TimedOut { .. })), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}
