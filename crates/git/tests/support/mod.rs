//! Helpers for the nucleic-git component tests: small temporary repositories and git queries.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)] // test helpers

use std::path::{Path, PathBuf};
use std::process::Command;

use nucleic_git::{FileChange, Repo, Worktree, WorktreeSpec};

/// A repository with `main` holding `a.txt`, `b.txt` and a `.gitignore` for `.env`.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub repo: Repo,
}

/// Temp dirs on tmpfs when available: worktree churn on this machine's ext4 is slow.
pub fn temp_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let builder = tempfile::Builder::new().prefix("nucleic-git-").to_owned();
    if shm.is_dir() { builder.tempdir_in(shm).unwrap() } else { builder.tempdir().unwrap() }
}

pub fn run_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

pub fn commit_file(dir: &Path, name: &str, text: &str, message: &str) -> String {
    write(&dir.join(name), text);
    run_git(dir, &["add", "--", name]);
    run_git(dir, &["commit", "-q", "-m", message]);
    run_git(dir, &["rev-parse", "HEAD"])
}

pub fn fixture() -> Fixture {
    let dir = temp_dir();
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    run_git(&root, &["init", "-q", "-b", "main"]);
    for (key, value) in
        [("user.name", "Test"), ("user.email", "test@example.com"), ("commit.gpgsign", "false")]
    {
        run_git(&root, &["config", key, value]);
    }
    write(&root.join("a.txt"), "one\ntwo\nthree\n");
    write(&root.join("b.txt"), "alpha\nbeta\n");
    write(&root.join(".gitignore"), ".env\n");
    run_git(&root, &["add", "-A"]);
    run_git(&root, &["commit", "-q", "-m", "init"]);
    let repo = Repo::open(&root).unwrap();
    let root = repo.root().to_path_buf();
    Fixture { _dir: dir, root, repo }
}

pub fn spec(slug: &str) -> WorktreeSpec {
    WorktreeSpec { slug: slug.into(), base_ref: "main".into(), copy_files: vec![], setup: None }
}

impl Fixture {
    pub fn worktree(&self, slug: &str) -> Worktree {
        self.repo.create_worktree(&spec(slug)).unwrap()
    }

    /// Every ref with its target, plus `git status` of each checkout: compared before/after.
    pub fn state(&self, checkouts: &[&Path]) -> String {
        let mut state = run_git(&self.root, &["for-each-ref", "--format=%(refname) %(objectname)"]);
        for dir in checkouts {
            state.push_str(&format!("\n{}:\n{}", dir.display(), status(dir)));
        }
        state
    }

    pub fn parents(&self, commit: &str) -> Vec<String> {
        let line = run_git(&self.root, &["log", "-1", "--format=%P", commit]);
        line.split_whitespace().map(str::to_owned).collect()
    }

    pub fn show(&self, spec: &str) -> String {
        run_git(&self.root, &["show", spec])
    }
}

/// `git status` with untracked files listed one by one and index details (modes, SHAs).
pub fn status(dir: &Path) -> String {
    run_git(dir, &["status", "--porcelain=v2", "--untracked-files=all"])
}

pub fn change<'a>(files: &'a [FileChange], path: &str) -> &'a FileChange {
    files
        .iter()
        .find(|f| f.path == Path::new(path))
        .unwrap_or_else(|| panic!("{path} in {files:?}"))
}
