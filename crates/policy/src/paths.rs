//! Paths: lexical normalisation, `~` expansion and symlink resolution behind a trait.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Resolves symbolic links in a path, as the filesystem would when the path is opened.
pub trait PathResolver: Send + Sync {
    /// The path with every symlink resolved; parts that do not exist yet are kept as written
    /// (after lexical normalisation).
    fn resolve(&self, path: &Path) -> PathBuf;
}

/// The real filesystem: canonicalises the longest existing ancestor and appends the rest.
#[derive(Debug, Clone, Copy, Default)]
pub struct FsResolver;

/// Symlinks followed through dangling links before a path is taken as written.
const MAX_DANGLING_LINKS: usize = 40;

impl PathResolver for FsResolver {
    fn resolve(&self, path: &Path) -> PathBuf {
        resolve_on_disk(path, 0)
    }
}

/// [`FsResolver::resolve`], `depth` dangling links deep.
fn resolve_on_disk(path: &Path, depth: usize) -> PathBuf {
    let path = normalize(path);
    let mut existing = path.as_path();
    let mut rest = Vec::new();
    let with_rest = |mut out: PathBuf, rest: &[std::ffi::OsString]| {
        for part in rest.iter().rev() {
            out.push(part);
        }
        normalize(&out)
    };
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return with_rest(real, &rest);
        }
        // A dangling symlink: a write through it creates its target, so that is where it lands.
        if depth < MAX_DANGLING_LINKS
            && let Ok(target) = std::fs::read_link(existing)
        {
            let base = existing.parent().unwrap_or(Path::new("/"));
            return with_rest(resolve_on_disk(&base.join(target), depth + 1), &rest);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path,
        }
    }
}

/// A resolver over a table of symlinks (link → target), for tests and simulations.
#[derive(Debug, Clone, Default)]
pub struct MapResolver {
    links: BTreeMap<PathBuf, PathBuf>,
}

impl MapResolver {
    /// An empty table: every path resolves to itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a symlink at `link` pointing to `target` (absolute, or relative to the link's dir).
    pub fn link(mut self, link: impl Into<PathBuf>, target: impl Into<PathBuf>) -> Self {
        self.links.insert(link.into(), target.into());
        self
    }
}

impl PathResolver for MapResolver {
    fn resolve(&self, path: &Path) -> PathBuf {
        let mut current = normalize(path);
        // Each round replaces the longest linked prefix; bounded like the kernel's 40 links.
        for _ in 0..40 {
            let hit =
                current.ancestors().find_map(|a| self.links.get(a).map(|t| (a.to_path_buf(), t)));
            let Some((link, target)) = hit else { return current };
            let rest = current.strip_prefix(&link).map(Path::to_path_buf).unwrap_or_default();
            let base = link.parent().unwrap_or(Path::new("/"));
            current = normalize(&base.join(target).join(rest));
        }
        current
    }
}

/// Removes `.` and resolves `..` lexically (never above `/`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if out.as_os_str() == "/" {
                    continue;
                }
                if out.file_name().is_some() {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Turns a path as the model wrote it into an absolute, normalised path: `~` and `$HOME`
/// expanded, relative paths taken from `cwd`.
pub fn absolute(text: &str, cwd: &Path, home: &Path) -> PathBuf {
    normalize(&joined(text, cwd, home))
}

/// The path as written, `~` and `$HOME` expanded and relative to `cwd`, not normalised
/// (`link/..` is only known once `link` is resolved).
pub fn joined(text: &str, cwd: &Path, home: &Path) -> PathBuf {
    if text == "~" || text == "$HOME" || text == "${HOME}" {
        home.to_path_buf()
    } else if let Some(rest) = text
        .strip_prefix("~/")
        .or_else(|| text.strip_prefix("$HOME/"))
        .or_else(|| text.strip_prefix("${HOME}/"))
    {
        home.join(rest)
    } else {
        cwd.join(text)
    }
}

/// Resolves a path as the kernel walks it: symlinks in front of each `..` are resolved
/// before it climbs (`link-out/..` is the link target's parent, not the link's directory).
pub fn physical(path: &Path, resolver: &dyn PathResolver) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out = resolver.resolve(&out);
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    resolver.resolve(&out)
}

/// True when `path` is `root` or inside it.
pub fn is_within(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_and_never_climbs_above_root() {
        assert_eq!(normalize(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(normalize(Path::new("/../../etc")), PathBuf::from("/etc"));
    }

    #[test]
    fn map_resolver_follows_links_in_prefixes() {
        let r = MapResolver::new().link("/w/link", "/home/u/.ssh").link("/w/rel", "../out");
        assert_eq!(r.resolve(Path::new("/w/link/id_rsa")), PathBuf::from("/home/u/.ssh/id_rsa"));
        assert_eq!(r.resolve(Path::new("/w/rel/x")), PathBuf::from("/out/x"));
        assert_eq!(r.resolve(Path::new("/w/file")), PathBuf::from("/w/file"));
    }

    #[test]
    fn map_resolver_stops_on_loops() {
        let r = MapResolver::new().link("/a", "/b").link("/b", "/a");
        let _ = r.resolve(Path::new("/a/x"));
    }

    #[test]
    fn fs_resolver_resolves_a_real_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let got = FsResolver.resolve(&root.join("link/new-file"));
        assert_eq!(got, root.join("real/new-file"));
    }

    #[test]
    fn fs_resolver_follows_a_dangling_symlink_to_where_a_write_would_land() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("wt")).unwrap();
        // Writing through `wt/out.txt` creates `outside.txt`; through `wt/d/x`, `gone/x`.
        std::os::unix::fs::symlink(root.join("outside.txt"), root.join("wt/out.txt")).unwrap();
        std::os::unix::fs::symlink("../gone", root.join("wt/d")).unwrap();
        std::os::unix::fs::symlink(root.join("wt/out.txt"), root.join("wt/chain")).unwrap();
        std::os::unix::fs::symlink(root.join("wt/loop"), root.join("wt/loop")).unwrap();
        assert_eq!(FsResolver.resolve(&root.join("wt/out.txt")), root.join("outside.txt"));
        assert_eq!(FsResolver.resolve(&root.join("wt/d/x")), root.join("gone/x"));
        assert_eq!(FsResolver.resolve(&root.join("wt/chain")), root.join("outside.txt"));
        let _ = FsResolver.resolve(&root.join("wt/loop/x"));
    }

    #[test]
    fn absolute_expands_home_and_cwd() {
        let (cwd, home) = (Path::new("/w"), Path::new("/home/u"));
        assert_eq!(absolute("~/.ssh/x", cwd, home), PathBuf::from("/home/u/.ssh/x"));
        assert_eq!(absolute("$HOME/.aws", cwd, home), PathBuf::from("/home/u/.aws"));
        assert_eq!(absolute("../x", cwd, home), PathBuf::from("/x"));
        assert_eq!(absolute("/etc/passwd", cwd, home), PathBuf::from("/etc/passwd"));
    }
}
