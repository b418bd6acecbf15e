//! The agent's file system calls (`fs/read_text_file`, `fs/write_text_file`) answered inside
//! the session's worktree only: a path outside it (through `..` or a symlink) is refused, and
//! a write where the agent's sandbox would not let it write itself (a read-only worktree, the
//! worktree's `.git` link, policy files) is refused too.

use std::path::{Component, Path, PathBuf};

use crate::isolation::Isolation;

/// Largest file read or written through the agent's calls.
pub(crate) const MAX_FILE_BYTES: usize = 32 * 1024 * 1024;

/// Why a call was not served: a JSON-RPC error for the agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct FsRefusal {
    pub code: i64,
    pub message: String,
}

impl FsRefusal {
    fn params(message: String) -> FsRefusal {
        FsRefusal { code: -32602, message }
    }
    fn io(message: String) -> FsRefusal {
        FsRefusal { code: -32603, message }
    }
}

/// `path` resolved inside `root`: absolute, no `..`, and its deepest existing ancestor (the
/// file itself when it exists) resolving, symlinks followed, under `root`.
pub(crate) fn inside(root: &Path, path: &str) -> Result<PathBuf, FsRefusal> {
    let outside = || {
        FsRefusal::params(format!(
            "refused: {path} is outside the session's worktree {}",
            root.display()
        ))
    };
    let wanted = Path::new(path);
    if !wanted.is_absolute() || wanted.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(outside());
    }
    let root = std::fs::canonicalize(root).map_err(|e| {
        FsRefusal::io(format!("the worktree {} cannot be resolved: {e}", root.display()))
    })?;
    let mut existing = wanted.to_path_buf();
    let mut rest = Vec::new();
    while std::fs::symlink_metadata(&existing).is_err() {
        let Some(name) = existing.file_name().map(ToOwned::to_owned) else { return Err(outside()) };
        rest.push(name);
        if !existing.pop() {
            return Err(outside());
        }
    }
    let mut resolved = std::fs::canonicalize(&existing).map_err(|_| outside())?;
    resolved.extend(rest.iter().rev());
    if resolved.starts_with(&root) { Ok(resolved) } else { Err(outside()) }
}

/// The text of `path` inside `root` (lines from `line`, 1-based, at most `limit`); a missing
/// file is `""` when `missing_as_empty`.
pub(crate) fn read(
    root: &Path,
    path: &str,
    line: Option<u64>,
    limit: Option<u64>,
    missing_as_empty: bool,
) -> Result<String, FsRefusal> {
    let file = inside(root, path)?;
    let text = match std::fs::metadata(&file) {
        Ok(m) if m.len() > MAX_FILE_BYTES as u64 => {
            return Err(FsRefusal::io(format!("{path} is larger than {MAX_FILE_BYTES} bytes")));
        }
        Ok(_) => std::fs::read_to_string(&file)
            .map_err(|e| FsRefusal::io(format!("cannot read {path}: {e}")))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && missing_as_empty => String::new(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(FsRefusal { code: -32002, message: format!("Resource not found: {path}") });
        }
        Err(e) => return Err(FsRefusal::io(format!("cannot read {path}: {e}"))),
    };
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1)) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

/// Refused unless the sandbox (when there is one) lets the agent write `file` itself.
fn sandbox_lets_write(
    sandbox: Option<&Isolation>,
    path: &str,
    file: &Path,
) -> Result<(), FsRefusal> {
    match sandbox {
        Some(iso) if !iso.lets_write(file) => Err(FsRefusal::params(format!(
            "refused: {path} is read-only to the agent in its sandbox"
        ))),
        _ => Ok(()),
    }
}

/// Writes `content` to `path` inside `root` (its missing parent directories created), where
/// `sandbox`, when the agent runs in one, lets it write.
pub(crate) fn write(
    root: &Path,
    sandbox: Option<&Isolation>,
    path: &str,
    content: &str,
) -> Result<(), FsRefusal> {
    if content.len() > MAX_FILE_BYTES {
        return Err(FsRefusal::params(format!(
            "refused: {} bytes for {path} is more than {MAX_FILE_BYTES}",
            content.len()
        )));
    }
    let file = inside(root, path)?;
    sandbox_lets_write(sandbox, path, &file)?;
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| FsRefusal::io(format!("cannot create {}: {e}", parent.display())))?;
    }
    // Checked again after the directories exist (a racing symlink is refused, not followed out).
    let file = inside(root, path)?;
    sandbox_lets_write(sandbox, path, &file)?;
    std::fs::write(&file, content).map_err(|e| FsRefusal::io(format!("cannot write {path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_the_worktree_are_served() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wt");
        std::fs::create_dir_all(&root).unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "keep").unwrap();
        let p = |rel: &str| root.join(rel).to_string_lossy().into_owned();
        write(&root, None, &p("sub/a.txt"), "hi\nthere\n").unwrap();
        assert_eq!(read(&root, &p("sub/a.txt"), None, None, true).unwrap(), "hi\nthere\n");
        assert_eq!(read(&root, &p("sub/a.txt"), Some(2), Some(1), true).unwrap(), "there\n");
        assert_eq!(read(&root, &p("missing.txt"), None, None, true).unwrap(), "");
        assert_eq!(read(&root, &p("missing.txt"), None, None, false).unwrap_err().code, -32002);
        for bad in [outside.to_string_lossy().into_owned(), p("../outside.txt"), "rel.txt".into()] {
            let err = write(&root, None, &bad, "pwned").unwrap_err();
            assert_eq!(err.code, -32602, "{bad}: {err}");
            assert!(err.message.contains("outside the session's worktree"), "{err}");
        }
        std::os::unix::fs::symlink(dir.path(), root.join("link")).unwrap();
        assert!(write(&root, None, &p("link/outside.txt"), "pwned").is_err());
        assert!(read(&root, &p("link/outside.txt"), None, None, true).is_err());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        // In a sandbox: only where it binds the agent writable.
        let mut iso = Isolation::new("bwrap".into());
        let canon = root.canonicalize().unwrap();
        iso.mounts.push(crate::isolation::Mount::Writable(canon.clone()));
        iso.mounts.push(crate::isolation::Mount::ReadOnly(canon.join(".git")));
        iso.mounts.push(crate::isolation::Mount::ReadOnly(canon.join(".claude/settings.json")));
        write(&root, Some(&iso), &p("ok.txt"), "fine").unwrap();
        for fenced in [".git", ".claude/settings.json"] {
            let err = write(&root, Some(&iso), &p(fenced), "pwned").unwrap_err();
            assert!(err.message.contains("read-only to the agent"), "{err}");
            assert!(!root.join(fenced).exists(), "{fenced}");
        }
        let read_only = Isolation::new("bwrap".into());
        assert!(write(&root, Some(&read_only), &p("ok.txt"), "changed").is_err());
        assert_eq!(std::fs::read_to_string(root.join("ok.txt")).unwrap(), "fine");
        let big = "x".repeat(MAX_FILE_BYTES + 1);
        assert!(write(&root, None, &p("big.txt"), &big).is_err());
    }
}
