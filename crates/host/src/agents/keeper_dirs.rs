//! Where a session's keepers keep their state: `<keepers dir>/<id>.<tag>`, oldest first.

use std::path::{Path, PathBuf};

use nucleic_agents::keeper::KeeperDir;

/// The keeper directories of session `id` under `keepers_dir` (`<id>.<tag>`), oldest first.
pub(crate) fn keeper_dirs_of(keepers_dir: &Path, id: &str) -> Vec<KeeperDir> {
    let Ok(entries) = std::fs::read_dir(keepers_dir) else {
        return Vec::new();
    };
    let prefix = format!("{id}.");
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| {
            (e.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH), e.path())
        })
        .collect();
    dirs.sort();
    dirs.into_iter().map(|(_, path)| KeeperDir(path)).collect()
}
