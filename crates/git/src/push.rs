//! The one git command that uses a transport: pushing a session branch to the project's remote.
//!
//! Every other host git call allows no protocol at all (`runner.rs`). A push is a deliberate,
//! narrow exception (see `docs/security.md`, "Pushing a session branch"):
//! - the URL is the project's configured remote, read by the host from the main repository's
//!   own `config` file (`branch.<base>.remote`, else `origin`; no includes), passed to git as a
//!   URL — never a remote name, so no `remote.*.receivepack`, `pushurl` or refspec applies — and
//!   refused when a `url.*.insteadOf` / `pushInsteadOf` rule would rewrite it;
//! - only the session's own branch, to the same name, never forced (`refs/heads/<b>:refs/heads/<b>`);
//! - only the protocol that URL needs (`GIT_ALLOW_PROTOCOL`: `file`, `https` or `ssh`);
//!   `http://`, `git://`, `ext::` and relative paths are refused;
//! - the locked configuration still applies (hooks, editors, signing…), plus settings for the
//!   push itself: no signed push, no submodule pushes, TLS verification on, no proxy, no extra
//!   headers;
//! - confined as every git call, with only what that protocol needs allowed to execute as well:
//!   the shell git runs a local `receive-pack` (and `ssh`) through, `ssh`, and for a local
//!   remote its own hooks directory (its hooks are the remote's, as on a server).

use std::path::{Path, PathBuf};

use crate::error::{GitError, Result};
use crate::finish::require_on_branch;
use crate::repo::{Repo, resolve_in};
use crate::runner::{Transport, git};
use crate::worktree::Worktree;

/// The remote used when the base branch names none.
pub const DEFAULT_REMOTE: &str = "origin";

/// The project's configured remote, as the host read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// Its name in the main repository's config.
    pub name: String,
    /// `remote.<name>.url`.
    pub url: String,
}

/// A push that went through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOutcome {
    /// The branch pushed (local and remote name).
    pub branch: String,
    /// The commit the remote branch now points at.
    pub tip: String,
    /// git's one-word summary (`[new branch]`, `[up to date]`, `abc..def`).
    pub summary: String,
}

/// Which transport a remote URL needs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RemoteKind {
    /// A repository on this machine (`/path`, `file:///path`).
    File(PathBuf),
    Https,
    Ssh,
}

impl Repo {
    /// The remote to push `base_branch`'s sessions to: `branch.<base>.remote`, else `origin`,
    /// read from the main repository's `config` file alone (no includes, nothing the
    /// session's worktree holds). [`GitError::NoRemote`] when it has no URL.
    pub fn project_remote(&self, base_branch: &str) -> Result<Remote> {
        let config = self.common_dir().join("config");
        let get = |key: &str| -> Result<Option<String>> {
            let command = git(self.main()).arg("config").arg("--file").arg(&config);
            let command = command.args(["--get", key]).read_only();
            let output = command.output()?;
            match output.code {
                Some(0) => Ok(Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())),
                Some(1) => Ok(None),
                _ => Err(command.failure(output)),
            }
        };
        let named = get(&format!("branch.{base_branch}.remote"))?
            .filter(|n| valid_remote_name(n) && n != ".");
        let name = named.unwrap_or_else(|| DEFAULT_REMOTE.to_owned());
        match get(&format!("remote.{name}.url"))? {
            Some(url) if !url.is_empty() => Ok(Remote { name, url }),
            _ => Err(GitError::NoRemote { name }),
        }
    }

    /// Pushes the session's branch to `remote` under the same name (never forced). The
    /// worktree must be on its branch; commit its work first ([`Repo::commit_all`]).
    /// [`GitError::PushRejected`] carries what the remote said (a hook's message).
    pub fn push_branch(&self, worktree: &Worktree, remote: &Remote) -> Result<PushOutcome> {
        let dir = self.session(worktree)?;
        require_on_branch(&dir, worktree)?;
        let kind = classify(&remote.url)?;
        self.refuse_rewrites(&remote.url)?;
        let branch = &worktree.branch;
        let tip = resolve_in(&dir, &format!("refs/heads/{branch}"))?;
        let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
        let command = git(&dir)
            .args(["push", "--porcelain", "--no-verify", "--no-recurse-submodules", "--"])
            .arg(&remote.url)
            .arg(&refspec)
            .transport(transport(&kind)?);
        let output = command.output()?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let line = stdout.lines().find(|l| l.contains(&refspec));
        let fields: Vec<&str> = line.map(|l| l.split('\t').collect()).unwrap_or_default();
        if output.code == Some(0) && fields.first().is_some_and(|f| *f != "!") {
            let summary = fields.get(2).copied().unwrap_or_default().trim().to_owned();
            return Ok(PushOutcome { branch: branch.clone(), tip, summary });
        }
        let said: Vec<&str> = output
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("remote:").map(str::trim))
            .filter(|l| !l.is_empty())
            .collect();
        let reason = match fields.get(2) {
            Some(summary) => summary.trim().trim_start_matches('[').trim_end_matches(']'),
            None => output.stderr.lines().last().unwrap_or("no answer from the remote"),
        };
        let mut message = reason.to_owned();
        if !said.is_empty() {
            message.push_str(&format!("; the remote said: {}", said.join(" / ")));
        }
        Err(GitError::PushRejected { url: remote.url.clone(), branch: branch.clone(), message })
    }

    /// Refuses a URL that a `url.<base>.insteadOf` or `pushInsteadOf` rule (in any config the
    /// agent may have written) would send elsewhere.
    fn refuse_rewrites(&self, url: &str) -> Result<()> {
        let command =
            git(self.main()).args(["config", "--get-regexp", r"^url\..*\.(push)?insteadof$"]);
        let output = command.clone().read_only().output()?;
        if !matches!(output.code, Some(0 | 1)) {
            return Err(command.failure(output));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        for line in text.lines() {
            let prefix = line.split_once(' ').map_or("", |(_, value)| value);
            if !prefix.is_empty() && url.starts_with(prefix) {
                let key = line.split_once(' ').map_or(line, |(k, _)| k);
                return Err(GitError::RemoteRefused {
                    url: url.to_owned(),
                    reason: format!("the repository's config rewrites it ({key})"),
                });
            }
        }
        Ok(())
    }
}

/// A remote's name as git allows it, without anything a config key could misread.
fn valid_remote_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The transport a URL needs, or why it is refused.
fn classify(url: &str) -> Result<RemoteKind> {
    let refuse =
        |reason: &str| GitError::RemoteRefused { url: url.to_owned(), reason: reason.into() };
    if url.starts_with('-') || url.chars().any(char::is_control) {
        return Err(refuse("it is not a URL"));
    }
    if let Some(path) = url.strip_prefix("file://") {
        return Ok(RemoteKind::File(PathBuf::from(path)));
    }
    if url.starts_with('/') {
        return Ok(RemoteKind::File(PathBuf::from(url)));
    }
    if url.starts_with("https://") {
        return Ok(RemoteKind::Https);
    }
    if url.starts_with("ssh://") {
        return Ok(RemoteKind::Ssh);
    }
    // scp-like `user@host:path`: a colon before any slash, and no `::` (a remote helper).
    if let Some((host, _)) = url.split_once(':')
        && !host.is_empty()
        && !host.contains('/')
        && !url.contains("::")
        && !url.contains("://")
    {
        return Ok(RemoteKind::Ssh);
    }
    Err(refuse("only https://, ssh (ssh:// or host:path) and local repositories are pushed to"))
}

/// What git may use for a push to a remote of this kind.
fn transport(kind: &RemoteKind) -> Result<Transport> {
    let mut config: Vec<(String, String)> = [
        ("push.gpgSign", "false"),
        ("push.recurseSubmodules", "no"),
        ("push.followTags", "false"),
        ("http.sslVerify", "true"),
        ("http.proxy", ""),
        ("http.extraHeader", ""),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let shell = canonical_program(Path::new("/bin/sh"))?;
    match kind {
        RemoteKind::File(path) => {
            // git starts the local receive-pack through the shell; the remote's hooks are the
            // remote's (a bare repository's `hooks/`, a checkout's `.git/hooks/`).
            let mut executables = vec![shell];
            for hooks in [path.join("hooks"), path.join(".git").join("hooks")] {
                if let Ok(hooks) = std::fs::canonicalize(&hooks) {
                    executables.push(hooks);
                }
            }
            Ok(Transport { protocol: "file", config, executables })
        }
        RemoteKind::Ssh => {
            let ssh = find_on_path("ssh").ok_or(GitError::RemoteRefused {
                url: String::new(),
                reason: "ssh is not installed".into(),
            })?;
            config.push(("core.sshCommand".into(), ssh.to_string_lossy().into_owned()));
            config.push(("ssh.variant".into(), "ssh".into()));
            Ok(Transport { protocol: "ssh", config, executables: vec![shell, ssh] })
        }
        RemoteKind::Https => Ok(Transport { protocol: "https", config, executables: vec![] }),
    }
}

/// `path`, resolved, when it exists.
fn canonical_program(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|e| GitError::io("cannot find", path, e))
}

/// The first executable `name` on `PATH`, resolved.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find_map(|candidate| {
        let meta = std::fs::metadata(&candidate).ok()?;
        let executable = meta.is_file() && meta.permissions().mode() & 0o111 != 0;
        executable.then(|| std::fs::canonicalize(&candidate).ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_file_https_and_ssh_remotes_are_pushed_to() {
        assert_eq!(classify("/srv/r.git").ok(), Some(RemoteKind::File("/srv/r.git".into())));
        assert_eq!(classify("file:///srv/r.git").ok(), Some(RemoteKind::File("/srv/r.git".into())));
        assert_eq!(classify("https://github.com/o/r.git").ok(), Some(RemoteKind::Https));
        assert_eq!(classify("ssh://git@github.com/o/r").ok(), Some(RemoteKind::Ssh));
        assert_eq!(classify("git@github.com:o/r.git").ok(), Some(RemoteKind::Ssh));
        for bad in ["http://h/r", "git://h/r", "ext::sh -c evil", "-uhack", "../r", "fd::3", "r"] {
            assert!(
                matches!(classify(bad), Err(GitError::RemoteRefused { .. })),
                "{bad} was accepted"
            );
        }
    }

    #[test]
    fn remote_names_are_plain() {
        assert!(valid_remote_name("origin") && valid_remote_name("up-stream.2"));
        assert!(!valid_remote_name("a b") && !valid_remote_name("") && !valid_remote_name("x/y"));
    }
}
