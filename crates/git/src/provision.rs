//! Preparing a fresh worktree: copying untracked files (like `.env`) from the main checkout and
//! running the setup script with a timeout that kills its whole process group.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{GitError, Result};
use crate::runner::REPO_LOCAL_ENV;
use crate::spawn::kill_process_group;

/// A setup script run once in a new worktree (e.g. `npm ci`).
#[derive(Debug, Clone)]
pub struct SetupSpec {
    /// Shell text, run as `sh -c <script>` with the worktree as working directory. It sees
    /// `NUCLEIC_ROOT` (the main checkout), `NUCLEIC_WORKTREE` and `NUCLEIC_BRANCH`.
    pub script: String,
    /// After this long the script and everything it started (its process group) is killed.
    pub timeout: Duration,
    /// Receives the script's stdout and stderr (created 0600, truncated).
    pub log_path: PathBuf,
}

/// Checks that `path` is relative and stays below its root: only normal components (and `.`).
fn check_relative(path: &Path) -> Result<()> {
    let escapes = || GitError::PathEscape { path: path.to_path_buf() };
    let mut normal = 0;
    for component in path.components() {
        match component {
            Component::Normal(_) => normal += 1,
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(escapes());
            }
        }
    }
    if normal == 0 { Err(escapes()) } else { Ok(()) }
}

/// A file to copy: where it really is in the main checkout, and its place below the root.
#[derive(Debug, Clone)]
pub(crate) struct PlannedCopy {
    source: PathBuf,
    relative: PathBuf,
}

/// Checks the relative paths in `files` against `from_root` before anything is created: each
/// must be relative without `..` and, when it exists, resolve (through any symlinks) to a file
/// inside `from_root`; otherwise [`GitError::PathEscape`]. Missing sources are left out.
pub(crate) fn plan_copies(from_root: &Path, files: &[PathBuf]) -> Result<Vec<PlannedCopy>> {
    let from_root = canonical(from_root)?;
    let mut plan = Vec::new();
    for relative in files {
        check_relative(relative)?;
        let source = from_root.join(relative);
        if std::fs::symlink_metadata(&source).is_err() {
            continue;
        }
        let real_source = canonical(&source)?;
        if !real_source.starts_with(&from_root) {
            return Err(GitError::PathEscape { path: relative.clone() });
        }
        if !real_source.is_file() {
            let source_error = std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a file");
            return Err(GitError::io("cannot copy", &source, source_error));
        }
        plan.push(PlannedCopy { source: real_source, relative: relative.clone() });
    }
    Ok(plan)
}

/// Copies the planned files to the same places under `to_root`, keeping permission bits (a
/// 0600 file stays 0600). Destinations that already exist are skipped (a tracked file is never
/// overwritten); a destination directory resolving outside `to_root` is
/// [`GitError::PathEscape`].
pub(crate) fn copy_planned(to_root: &Path, plan: &[PlannedCopy]) -> Result<()> {
    let to_root = canonical(to_root)?;
    for PlannedCopy { source, relative } in plan {
        let escapes = || GitError::PathEscape { path: relative.clone() };
        let target = to_root.join(relative);
        if std::fs::symlink_metadata(&target).is_ok() {
            continue;
        }
        let Some(target_dir) = target.parent() else { return Err(escapes()) };
        std::fs::create_dir_all(target_dir)
            .map_err(|e| GitError::io("cannot create directory", target_dir, e))?;
        if !canonical(target_dir)?.starts_with(&to_root) {
            return Err(escapes());
        }
        std::fs::copy(source, &target).map_err(|e| GitError::io("cannot copy to", &target, e))?;
    }
    Ok(())
}

fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|e| GitError::io("cannot resolve", path, e))
}

/// Runs `setup` in `worktree` with `env` added. A non-zero exit is [`GitError::SetupFailed`];
/// running past the timeout kills the script's process group and is
/// [`GitError::SetupTimedOut`]. Either way a last `[nucleic] …` line in the log says what
/// happened.
pub(crate) fn run_setup(worktree: &Path, setup: &SetupSpec, env: &[(&str, &Path)]) -> Result<()> {
    let log_path = &setup.log_path;
    if let Some(dir) = log_path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| GitError::io("cannot create directory", dir, e))?;
    }
    let mut log = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(log_path)
        .map_err(|e| GitError::io("cannot open setup log", log_path, e))?;
    let clone_log = |log: &std::fs::File| {
        log.try_clone().map_err(|e| GitError::io("cannot open setup log", log_path, e))
    };
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(&setup.script)
        .current_dir(worktree)
        .stdin(Stdio::null())
        .stdout(clone_log(&log)?)
        .stderr(clone_log(&log)?)
        .process_group(0);
    for key in REPO_LOCAL_ENV {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child =
        command.spawn().map_err(|e| GitError::io("cannot start setup script in", worktree, e))?;
    let deadline = Instant::now() + setup.timeout;
    let mut pause = Duration::from_millis(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(GitError::io("cannot wait for setup script in", worktree, e)),
        }
        let now = Instant::now();
        if now >= deadline {
            kill_process_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let _ = writeln!(log, "\n[nucleic] setup timed out after {:?}; killed", setup.timeout);
            return Err(GitError::SetupTimedOut {
                log_path: log_path.clone(),
                timeout: setup.timeout,
            });
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(100));
    };
    if status.success() {
        return Ok(());
    }
    let code = status.code();
    let _ = writeln!(log, "\n[nucleic] setup failed: {status}");
    Err(GitError::SetupFailed { log_path: log_path.clone(), code })
}
