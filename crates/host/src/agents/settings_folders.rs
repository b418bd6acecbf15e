//! The project folders agent CLIs load settings from (`.claude/`, `.codex/`, `.gemini/`, …): kept
//! read-only in every agent's view, because the hooks and helper commands in them run as the CLI
//! itself, outside its own sandbox and unasked.

use std::path::Path;

use nucleic_agents::backend::PROJECT_SETTINGS_DIRS;
use nucleic_agents::isolation::Mount;

/// The read-only mount that keeps worktree `cwd`'s settings folder `name` as it is: the folder
/// (made empty when absent, which git does not see) or the folder a link of it points to inside
/// the worktree ([`settings_links_refused`] refuses every other link before this), holding the
/// files the agent being started cannot start without (`seeds`: its
/// `ConfinementNeeds::settings_seeds`).
pub(super) fn settings_dir(cwd: &Path, name: &str, seeds: &[(&str, &str, &str)]) -> Option<Mount> {
    let path = cwd.join(name);
    let folder = match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = std::fs::canonicalize(&path).ok()?;
            (target.starts_with(cwd) && target != cwd).then_some(target)?
        }
        Ok(_) => path,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir(&path).ok()?;
            path
        }
        Err(_) => return None,
    };
    seed(&folder, name, seeds);
    Some(Mount::ReadOnly(folder))
}

/// Makes the seed files of settings folder `name` in `folder` when absent (never through a
/// link: `create_new` refuses one); the agent reports what it cannot do without them.
fn seed(folder: &Path, name: &str, seeds: &[(&str, &str, &str)]) {
    for (_, file, content) in seeds.iter().filter(|(dir, _, _)| *dir == name) {
        let made = std::fs::OpenOptions::new().write(true).create_new(true).open(folder.join(file));
        if let Ok(mut f) = made {
            let _ = std::io::Write::write_all(&mut f, content.as_bytes());
        }
    }
}

/// Why an agent cannot be confined in `cwd`: one of its settings folders is a link to the
/// worktree itself, out of it, or to nothing — the folder it names could then be written. `None`
/// when every one is a folder, absent, or a link to a folder inside.
pub fn settings_links_refused(cwd: &Path) -> Option<String> {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned());
    PROJECT_SETTINGS_DIRS.iter().find_map(|name| {
        let path = cwd.join(name);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.file_type().is_symlink() {
            return None;
        }
        let inside = std::fs::canonicalize(&path)
            .is_ok_and(|t| t.starts_with(&cwd) && t != cwd && t.is_dir());
        (!inside).then(|| {
            let target = std::fs::read_link(&path).unwrap_or_default();
            format!(
                "{} is a link to {}: an agent's settings folder must be a folder of the worktree \
                 (hooks in it run unasked, so it is kept read-only); replace the link with a folder",
                path.display(),
                target.display()
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_out_of_the_worktree_to_it_or_to_nothing_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(wt.join("conf/claude")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        assert_eq!(settings_links_refused(&wt), None, "no folder at all is fine");
        std::os::unix::fs::symlink("conf/claude", wt.join(".claude")).unwrap();
        assert_eq!(settings_links_refused(&wt), None, "a link to a folder inside is fine");
        let canonical = std::fs::canonicalize(&wt).unwrap();
        assert_eq!(
            settings_dir(&canonical, ".claude", SEEDS),
            Some(Mount::ReadOnly(canonical.join("conf/claude")))
        );
        for target in ["../outside", ".", "missing", "/tmp"] {
            let _ = std::fs::remove_file(wt.join(".codex"));
            std::os::unix::fs::symlink(target, wt.join(".codex")).unwrap();
            let why = settings_links_refused(&wt).unwrap_or_default();
            assert!(why.contains(".codex is a link to") && why.contains(target), "{target}: {why}");
        }
    }

    #[test]
    fn an_absent_folder_is_made_and_kept_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let wt = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(settings_dir(&wt, ".gemini", SEEDS), Some(Mount::ReadOnly(wt.join(".gemini"))));
        assert!(wt.join(".gemini").is_dir());
    }

    /// OpenCode's seeds, as its backend row has them.
    const SEEDS: &[(&str, &str, &str)] =
        &[(".opencode", ".gitignore", "node_modules\npackage.json\n.gitignore")];

    #[test]
    fn without_seeds_an_absent_opencode_folder_is_made_empty() {
        let dir = tempfile::tempdir().unwrap();
        let wt = std::fs::canonicalize(dir.path()).unwrap();
        assert!(settings_dir(&wt, ".opencode", &[]).is_some());
        assert_eq!(std::fs::read_dir(wt.join(".opencode")).unwrap().count(), 0);
    }

    #[test]
    fn opencode_finds_its_gitignore_made_and_a_planted_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let wt = std::fs::canonicalize(dir.path()).unwrap().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        assert_eq!(
            settings_dir(&wt, ".opencode", SEEDS),
            Some(Mount::ReadOnly(wt.join(".opencode")))
        );
        let ignore = std::fs::read_to_string(wt.join(".opencode/.gitignore")).unwrap();
        assert_eq!(ignore.lines().last(), Some(".gitignore"), "it ignores itself: {ignore}");
        // An existing folder whose `.gitignore` is a link out: the link is left, nothing written.
        let outside = wt.parent().unwrap().join("outside.txt");
        std::fs::write(&outside, "keep\n").unwrap();
        std::fs::remove_file(wt.join(".opencode/.gitignore")).unwrap();
        std::os::unix::fs::symlink(&outside, wt.join(".opencode/.gitignore")).unwrap();
        assert!(settings_dir(&wt, ".opencode", SEEDS).is_some());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep\n");
        // Other folders get nothing.
        settings_dir(&wt, ".claude", SEEDS);
        assert_eq!(std::fs::read_dir(wt.join(".claude")).unwrap().count(), 0);
    }
}
