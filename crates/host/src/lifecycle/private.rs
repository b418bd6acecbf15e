//! The host's data directory is private: created 0700, and an existing directory or file that
//! others can read (a home made 0755 by an older build) is tightened to 0700 / 0600.

use std::fs::{DirBuilder, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Replaces the file `path` atomically with `contents`, 0600 from the start: written beside it
/// as `<name>.tmp`, synced, then renamed over it. Readers see the old or the new file, never half.
pub fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(contents)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Creates `home` (missing parents too) 0700 and tightens what is already there: `home`, its
/// files, `home/sessions`, each session directory and its files. Symbolic links are left alone.
pub(crate) fn private_home(home: &Path, sessions: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(home)?;
    tighten(home)?;
    tighten_files_in(home)?;
    if sessions.is_dir() {
        tighten(sessions)?;
        for entry in std::fs::read_dir(sessions)? {
            let path = entry?.path();
            if std::fs::symlink_metadata(&path)?.is_dir() {
                tighten(&path)?;
                tighten_files_in(&path)?;
            }
        }
    }
    Ok(())
}

/// Creates `dir` (and missing parents) 0700, tightening it if it exists.
pub(crate) fn private_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    tighten(dir)
}

/// Takes group and other permissions off a directory or regular file (not a symlink).
fn tighten(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 && (meta.is_dir() || meta.is_file()) {
        std::fs::set_permissions(path, Permissions::from_mode(mode & 0o700))?;
    }
    Ok(())
}

fn tighten_files_in(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            tighten(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_home_is_0700_and_an_old_open_one_is_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("a/b/home");
        private_home(&fresh, &fresh.join("sessions")).unwrap();
        assert_eq!(mode(&fresh), 0o700);

        let old = dir.path().join("old");
        let session = old.join("sessions/s1");
        std::fs::create_dir_all(&session).unwrap();
        for d in [&old, &old.join("sessions"), &session] {
            std::fs::set_permissions(d, Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(old.join("daemon.log"), "x").unwrap();
        std::fs::set_permissions(old.join("daemon.log"), Permissions::from_mode(0o644)).unwrap();
        std::fs::write(session.join("transcript.jsonl"), "").unwrap();
        std::fs::set_permissions(session.join("transcript.jsonl"), Permissions::from_mode(0o664))
            .unwrap();
        // Not ours to change: where a symlink points.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").unwrap();
        std::fs::set_permissions(&elsewhere, Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, old.join("link")).unwrap();

        private_home(&old, &old.join("sessions")).unwrap();
        assert_eq!(mode(&old), 0o700);
        assert_eq!(mode(&old.join("sessions")), 0o700);
        assert_eq!(mode(&session), 0o700);
        assert_eq!(mode(&old.join("daemon.log")), 0o600);
        assert_eq!(mode(&session.join("transcript.jsonl")), 0o600);
        assert_eq!(mode(&elsewhere), 0o644);
    }
}
