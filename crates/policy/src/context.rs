//! What a decision depends on besides the rules: where the session works and its mode.

use std::path::{Path, PathBuf};

use crate::mode::Mode;
use crate::paths::{self, PathResolver};

/// The session a tool call comes from.
pub struct Context<'r> {
    /// The project's main checkout (`/path` rules are anchored here).
    pub project_root: PathBuf,
    /// The session's worktree: the only place writes may land.
    pub worktree: PathBuf,
    /// The agent's working directory (relative paths start here; usually the worktree).
    pub cwd: PathBuf,
    /// The person's home directory (`~`).
    pub home: PathBuf,
    /// The host's data directory (never read or written by an agent).
    pub data_dir: PathBuf,
    /// Other directories writes may land in (e.g. a per-session temporary directory).
    pub extra_write_roots: Vec<PathBuf>,
    /// Folders outside the worktree the agent may read — even inside a protected directory —
    /// but never write: the session's attachments (files sent from a chat), which the host
    /// keeps in its data dir and the sandbox shows read-only.
    pub read_roots: Vec<PathBuf>,
    /// The session's mode.
    pub mode: Mode,
    /// Resolves symlinks (the real filesystem, or a table in tests).
    pub resolver: &'r dyn PathResolver,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("project_root", &self.project_root)
            .field("worktree", &self.worktree)
            .field("cwd", &self.cwd)
            .field("home", &self.home)
            .field("data_dir", &self.data_dir)
            .field("extra_write_roots", &self.extra_write_roots)
            .field("read_roots", &self.read_roots)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Context<'_> {
    /// A path as written (relative to `base`, `~` expanded), symlinks resolved.
    pub fn resolve_from(&self, text: &str, base: &Path) -> PathBuf {
        if text.contains("..") {
            return paths::physical(&paths::joined(text, base, &self.home), self.resolver);
        }
        self.resolver.resolve(&paths::absolute(text, base, &self.home))
    }

    /// True when a resolved path lies in the worktree or an extra write root.
    pub fn may_write(&self, resolved: &Path) -> bool {
        let worktree = self.resolver.resolve(&self.worktree);
        paths::is_within(resolved, &worktree)
            || self
                .extra_write_roots
                .iter()
                .any(|root| paths::is_within(resolved, &self.resolver.resolve(root)))
            || is_device_sink(resolved)
    }

    /// True when `path` lies in the session's own tree (its worktree or project root) and that
    /// tree lies inside the protected directory `dir`: a project kept inside the host's data
    /// dir (`nucleic demo --home`) may be worked on, as bubblewrap exposes it; the rest of the
    /// data dir stays protected.
    /// A read root ([`Context::read_roots`]) is exposed likewise; writing it stays refused by
    /// the `write-outside-worktree` invariant (it is no write root).
    pub fn exposed_in(&self, path: &Path, dir: &Path) -> bool {
        [&self.worktree, &self.project_root].into_iter().chain(&self.read_roots).any(|tree| {
            let tree = self.resolver.resolve(tree);
            paths::is_within(path, &tree) && paths::is_within(&tree, dir) && tree != dir
        })
    }

    /// True when a resolved path lies in a read root.
    pub fn in_read_root(&self, resolved: &Path) -> bool {
        self.read_roots.iter().any(|root| paths::is_within(resolved, &self.resolver.resolve(root)))
    }

    /// Credential files and stores outside the protected directories: reading one is asked,
    /// whatever the rules say (`cat ~/.netrc` under `Bash(cat:*)`). Under the home as written
    /// and as resolved (one resolution, not one per store: `FsResolver` walks the disk), and
    /// wherever they sit by name (`protected::names_credential_store`).
    pub fn credential_stores(&self) -> Vec<PathBuf> {
        let resolved_home = self.resolver.resolve(&self.home);
        let mut homes = vec![self.home.as_path()];
        if resolved_home != self.home {
            homes.push(resolved_home.as_path());
        }
        let mut stores: Vec<PathBuf> = homes
            .iter()
            .flat_map(|home| CREDENTIAL_STORES_IN_HOME.iter().map(|name| home.join(name)))
            .collect();
        stores.extend(CREDENTIAL_STORES_SYSTEM.iter().map(PathBuf::from));
        stores
    }

    /// The protected directories: `~/.ssh`, `~/.aws`, `~/.config/gh` and the host's data dir.
    pub fn protected_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![
            self.home.join(".ssh"),
            self.home.join(".aws"),
            self.home.join(".config").join("gh"),
            self.data_dir.clone(),
        ];
        let resolved: Vec<PathBuf> = dirs.iter().map(|d| self.resolver.resolve(d)).collect();
        dirs.extend(resolved);
        dirs
    }
}

/// Files and directories under the home that hold credentials or their traces (relative).
pub(crate) const CREDENTIAL_STORES_IN_HOME: &[&str] = &[
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".config/gcloud",
    ".azure",
    ".config/hub",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
];
/// The system's own credential files.
const CREDENTIAL_STORES_SYSTEM: &[&str] = &["/etc/shadow", "/etc/gshadow", "/etc/sudoers"];

/// `/dev/null` and friends: writing them changes nothing on disk.
fn is_device_sink(path: &Path) -> bool {
    matches!(path.to_str(), Some("/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"))
        || path.starts_with("/dev/fd")
}

impl<'r> Context<'r> {
    /// A copy sharing the same resolver.
    pub fn clone_ref(&self) -> Context<'r> {
        Context {
            project_root: self.project_root.clone(),
            worktree: self.worktree.clone(),
            cwd: self.cwd.clone(),
            home: self.home.clone(),
            data_dir: self.data_dir.clone(),
            extra_write_roots: self.extra_write_roots.clone(),
            read_roots: self.read_roots.clone(),
            mode: self.mode,
            resolver: self.resolver,
        }
    }
}
