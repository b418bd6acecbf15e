//! What a worktree takes on disk, with the build output in it (`target/`, `node_modules/`, …)
//! counted apart, since that part is cheap to make again.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

/// Bytes allocated below a directory.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DiskUsage {
    /// Everything, build output included.
    pub bytes: u64,
    /// The part inside recognised build-output directories.
    pub build_bytes: u64,
    /// False when the walk stopped at its deadline: the figures are a lower bound.
    pub complete: bool,
}

/// Directory names that hold build output or caches, whatever is in them.
const BUILD_DIRS: &[&str] =
    &["node_modules", "__pycache__", ".pytest_cache", ".mypy_cache", ".tox", ".gradle", ".next"];

/// Whether the directory `dir` (named `name`) is build output: a name from [`BUILD_DIRS`], a
/// Cargo target dir, a Python virtualenv, or any directory with a `CACHEDIR.TAG`
/// (<https://bford.info/cachedir/>), which cargo and many other tools write.
fn is_build_dir(dir: &Path, name: &str) -> bool {
    BUILD_DIRS.contains(&name)
        || dir.join("CACHEDIR.TAG").is_file()
        || (name == "target" && dir.join(".rustc_info.json").is_file())
        || dir.join("pyvenv.cfg").is_file()
}

/// Bytes allocated to the files below `dir` (symlinks not followed, nothing outside `dir`),
/// walking until `deadline` at most.
pub fn measure(dir: &Path, deadline: Instant) -> DiskUsage {
    let mut usage = DiskUsage { complete: true, ..DiskUsage::default() };
    // (directory, inside build output)
    let mut stack = vec![(dir.to_path_buf(), false)];
    let mut seen = 0u32;
    while let Some((next, in_build)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else { continue };
        for entry in entries.flatten() {
            seen = seen.wrapping_add(1);
            if seen.is_multiple_of(1024) && Instant::now() >= deadline {
                usage.complete = false;
                return usage;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let bytes = meta.blocks().saturating_mul(512);
            let build = in_build
                || (meta.is_dir()
                    && entry.file_name().to_str().is_some_and(|n| is_build_dir(&entry.path(), n)));
            usage.bytes = usage.bytes.saturating_add(bytes);
            if build {
                usage.build_bytes = usage.build_bytes.saturating_add(bytes);
            }
            if meta.is_dir() {
                stack.push((entry.path(), build));
            }
        }
    }
    usage
}

/// Bytes allocated to the files below `dir` (symlinks not followed), however long it takes.
pub fn disk_usage(dir: &Path) -> u64 {
    measure(dir, Instant::now() + std::time::Duration::from_secs(3600)).bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write(path: &Path, len: usize) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, vec![b'x'; len]).unwrap();
    }

    #[test]
    fn build_output_is_counted_apart_and_symlinks_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wt");
        write(&root.join("src/main.rs"), 10_000);
        write(&root.join("node_modules/left-pad/index.js"), 40_000);
        write(&root.join("target/.rustc_info.json"), 100);
        write(&root.join("target/debug/app"), 80_000);
        write(&root.join("target-notes/readme"), 5_000); // only the name is alike
        write(&root.join("cache/CACHEDIR.TAG"), 43);
        write(&root.join("cache/blob"), 20_000);
        let outside = dir.path().join("outside");
        write(&outside.join("huge"), 500_000);
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let usage = measure(&root, Instant::now() + Duration::from_secs(60));
        assert!(usage.complete);
        let build = 40_000 + 100 + 80_000 + 43 + 20_000;
        assert!(usage.build_bytes >= build, "{usage:?}");
        assert!(usage.build_bytes < build + 64 * 1024, "{usage:?}");
        assert!(usage.bytes >= build + 15_000, "{usage:?}");
        assert!(usage.bytes < 400_000, "the symlinked dir was followed: {usage:?}");
    }

    #[test]
    fn a_walk_past_its_deadline_says_it_is_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3000 {
            write(&dir.path().join(format!("d{}/f{i}", i % 7)), 1);
        }
        let usage = measure(dir.path(), Instant::now());
        assert!(!usage.complete, "{usage:?}");
        assert!(measure(dir.path(), Instant::now() + Duration::from_secs(60)).complete);
    }
}
