//! Read-only files that do not exist yet, made first where the agent could otherwise create
//! them: `bwrap` binds only paths that exist, so a missing `~/.gemini/settings.json` in a
//! writable state folder (or a worktree admin dir's `config.worktree`) would be the agent's to
//! plant — configuration a later run, the person's own included, loads and obeys.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nucleic_agents::isolation::Isolation;
#[cfg(test)]
use nucleic_agents::isolation::Mount;

/// Makes each of `iso`'s files to make first (`made_first`: configuration files, never a
/// folder or git's `.git`, whose absence means something) that is missing but creatable inside
/// the sandbox (its nearest existing folder is writable there): an empty file, `{}` for JSON
/// (what every agent reads as "nothing set"), owner-only. The error names the path that could
/// not be made: the start is refused rather than run with the file plantable.
pub fn make_missing_read_only_files(iso: &Isolation) -> Result<(), String> {
    for path in &iso.made_first {
        if std::fs::symlink_metadata(path).is_ok() {
            continue;
        }
        let Some(existing) = path.ancestors().skip(1).find(|dir| dir.is_dir()) else { continue };
        if !iso.lets_write(existing) {
            continue;
        }
        make_empty(path).map_err(|e| {
            format!(
                "cannot make {} before the agent starts (left missing, the agent could create \
                 it, and it is configuration the agent must not write): {e}",
                path.display()
            )
        })?;
    }
    Ok(())
}

/// An empty file at `path` (and its folders), `{}` when it is JSON; never replacing one.
fn make_empty(path: &Path) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let content: &[u8] = match path.extension().and_then(|e| e.to_str()) {
        Some("json") => b"{}\n",
        _ => b"",
    };
    let created = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
    match created {
        Ok(mut file) => file.write_all(content),
        // Made meanwhile (another start): it exists, which is all that is needed.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_read_only_file_in_a_writable_folder_is_made_and_others_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let fenced = dir.path().join("fenced");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(&fenced).unwrap();
        std::fs::write(state.join("kept.toml"), "x = 1\n").unwrap();
        let mut iso = Isolation::new("bwrap".into());
        iso.mounts = vec![
            Mount::Writable(state.clone()),
            Mount::ReadOnly(state.join("settings.json")),
            Mount::ReadOnly(state.join("config.toml")),
            Mount::ReadOnly(state.join("kept.toml")),
            Mount::ReadOnly(state.join("deep/er/GEMINI.md")),
            Mount::ReadOnly(fenced.join("not-writable.json")),
            // A missing read-only path that is not to be made (a folder, `.git`): left alone.
            Mount::ReadOnly(state.join(".git")),
        ];
        iso.made_first = ["settings.json", "config.toml", "kept.toml", "deep/er/GEMINI.md"]
            .iter()
            .map(|f| state.join(f))
            .chain([fenced.join("not-writable.json")])
            .collect();
        make_missing_read_only_files(&iso).unwrap();
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(&state.join("settings.json")), "{}\n");
        assert_eq!(read(&state.join("config.toml")), "");
        assert_eq!(read(&state.join("kept.toml")), "x = 1\n", "an existing file is kept");
        assert_eq!(read(&state.join("deep/er/GEMINI.md")), "");
        assert!(!fenced.join("not-writable.json").exists(), "not creatable inside: left alone");
        assert!(!state.join(".git").exists(), "only the files to make first are made");
        let mode = std::fs::metadata(state.join("settings.json")).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
    }

    #[test]
    fn a_file_that_cannot_be_made_refuses_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        // A folder where the file's folder should be: creating under it fails.
        std::fs::write(state.join("sub"), "a file, not a folder").unwrap();
        let mut iso = Isolation::new("bwrap".into());
        iso.mounts =
            vec![Mount::Writable(state.clone()), Mount::ReadOnly(state.join("sub/settings.json"))];
        iso.made_first = vec![state.join("sub/settings.json")];
        let why = make_missing_read_only_files(&iso).unwrap_err();
        assert!(why.contains("sub/settings.json"), "{why}");
    }
}
