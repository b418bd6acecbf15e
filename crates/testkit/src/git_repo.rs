//! Real git for tests: run it with a throwaway identity, make a one-commit repository, and the
//! request for a simulated session in it.

use std::path::{Path, PathBuf};

use nucleic_protocol::{Backend, NewSession};

/// Runs `git ARGS` in `dir` (identity and signing set for tests); its stdout. Panics, saying
/// what git said, when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `dir/repo`: a repository on `main` with one commit (`README.md`), its canonical path.
pub fn repo(dir: &Path) -> PathBuf {
    let root = dir.join("repo");
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hello\n")
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "init"]);
    root.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", root.display()))
}

/// A new simulated-agent session in `project` with this first prompt.
pub fn new_session(project: &str, prompt: &str) -> NewSession {
    NewSession {
        project_id: project.into(),
        base_ref: None,
        backend: Some(Backend::Simulated),
        model: None,
        permission_mode: None,
        title: None,
        mode: None,
        prompt: prompt.into(),
    }
}
