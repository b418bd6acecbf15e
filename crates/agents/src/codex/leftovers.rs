//! Empty mount points codex's sandbox leaves behind: bubblewrap mounts read-only tmpfs over
//! `.git`, `.agents`, `.aws` and `.codex` inside the workspace, creating them when absent. A
//! command that completes removes them again; one still running when codex exits (after an
//! interrupt, a stop) leaves them — and an empty `.git` makes the directory look like a broken
//! repository. The adapter notes which were absent at start and removes them at exit if they are
//! empty directories (`remove_dir` refuses anything else).

use std::path::{Path, PathBuf};

/// The names codex's sandbox protects in the workspace (0.171.0).
const MOUNT_POINTS: &[&str] = &[".git", ".agents", ".aws", ".codex"];

/// Which mount points a workspace lacked when codex started.
#[derive(Debug, Clone)]
pub(crate) struct Leftovers {
    cwd: PathBuf,
    absent: Vec<&'static str>,
}

impl Leftovers {
    pub(crate) fn note(cwd: &Path) -> Leftovers {
        let absent =
            MOUNT_POINTS.iter().copied().filter(|n| !cwd.join(n).exists()).collect::<Vec<_>>();
        Leftovers { cwd: cwd.to_owned(), absent }
    }

    /// [`Leftovers::clean`], retrying for up to a second while one is still a directory (the
    /// sandbox may still be tearing its mounts down when codex's wrapper has exited).
    pub(crate) async fn clean_after_exit(&self) {
        for _ in 0..10 {
            self.clean();
            if !self.absent.iter().any(|n| self.cwd.join(n).is_dir()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Removes those that are now empty directories; returns their names.
    pub(crate) fn clean(&self) -> Vec<&'static str> {
        self.absent
            .iter()
            .copied()
            .filter(|n| {
                let path = self.cwd.join(n);
                path.is_dir() && std::fs::remove_dir(&path).is_ok()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_empty_directories_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir(ws.join(".codex")).unwrap();
        let noted = Leftovers::note(ws);
        std::fs::create_dir(ws.join(".git")).unwrap();
        std::fs::create_dir(ws.join(".aws")).unwrap();
        std::fs::write(ws.join(".aws/config"), "keep").unwrap();
        std::fs::write(ws.join(".agents"), "a file").unwrap();
        assert_eq!(noted.clean(), vec![".git"]);
        assert!(ws.join(".codex").is_dir() && ws.join(".aws/config").exists());
        assert!(ws.join(".agents").is_file());
    }
}
