//! The single place git is spawned: explicit repository locations, configuration that would run
//! a program or redirect git switched off, fixed locale, no inherited repo overrides.
//!
//! Everything a session's agent can write is hostile input: its worktree (the `.git` gitlink
//! included), the worktree's admin dir and the repository's own `config`, `hooks/` and `info/`
//! (the agent's commits write to the common dir). So every command (see `docs/security.md`):
//! - names its git dir, common dir and work tree explicitly ([`Checkout`]: `GIT_DIR`,
//!   `GIT_COMMON_DIR`, `GIT_WORK_TREE`, from the host's own records): git never discovers a
//!   repository, so it never reads a `.git` file or an admin dir's `commondir`;
//! - overrides every setting that runs a program ([`LOCKED_CONFIG`]) as command-line config,
//!   which wins over every config file (system, global, the repository's, `config.worktree`,
//!   and whatever they include);
//! - reads no `.gitattributes` (`--attr-source` = the empty tree), so no attribute in the work
//!   tree or in a commit names a filter, diff or merge driver;
//! - allows no transport (`GIT_ALLOW_PROTOCOL` empty, `GIT_NO_LAZY_FETCH`), so a planted
//!   promisor remote, `core.sshCommand`, credential helper or remote helper never starts;
//! - runs confined where Linux allows: it may execute only git itself, and is killed at its
//!   deadline (`spawn.rs`).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{GitError, Result};
use crate::spawn;

/// How long one git command may run before it is killed, unless the [`crate::Repo`] was given
/// another deadline ([`crate::Repo::with_git_deadline`]).
pub const GIT_DEADLINE: Duration = Duration::from_secs(600);

/// How long finding a repository (`git rev-parse` when a [`crate::Repo`] is opened) may take.
const DISCOVERY_DEADLINE: Duration = Duration::from_secs(60);

/// Environment variables that point git at another repository, index or config
/// (`git rev-parse --local-env-vars`). They are never inherited: a host started from a git hook
/// would otherwise operate on the wrong repository or index.
pub(crate) const REPO_LOCAL_ENV: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// A program path that can never be executed (`/dev/null` is not a directory): the value for
/// every setting that names a program the host must never run.
const NO_PROGRAM: &str = "/dev/null/nucleic-runs-no-program";

/// Settings fixed for every host git call, passed as command-line config (`GIT_CONFIG_COUNT`),
/// which git reads last: nothing in a config file can turn them back on.
pub(crate) const LOCKED_CONFIG: &[(&str, &str)] = &[
    ("core.quotePath", "off"),
    // Programs git would otherwise run on the repository's say-so.
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", NO_PROGRAM),
    ("core.sshCommand", NO_PROGRAM),
    ("core.gitProxy", NO_PROGRAM),
    ("core.alternateRefsCommand", NO_PROGRAM),
    ("credential.helper", ""),
    ("diff.external", NO_PROGRAM),
    ("gpg.program", NO_PROGRAM),
    ("gpg.openpgp.program", NO_PROGRAM),
    ("gpg.x509.program", NO_PROGRAM),
    ("gpg.ssh.program", NO_PROGRAM),
    ("gpg.ssh.defaultKeyCommand", NO_PROGRAM),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("merge.verifySignatures", "false"),
    ("log.showSignature", "false"),
    // Attributes name filter / diff / merge drivers: none from the user's attributes file
    // either (the repository's own are skipped with `--attr-source`).
    ("core.attributesFile", "/dev/null"),
    // No transport at all (also `GIT_ALLOW_PROTOCOL`, which beats `protocol.<name>.allow`).
    ("protocol.allow", "never"),
    // Nothing that starts more work or looks elsewhere than asked.
    ("submodule.recurse", "false"),
    ("core.useReplaceRefs", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
];

/// Identity used only for throwaway snapshot commits that no ref ever points at.
const SNAPSHOT_IDENTITY: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", "nucleic"),
    ("GIT_AUTHOR_EMAIL", "nucleic@localhost"),
    ("GIT_COMMITTER_NAME", "nucleic"),
    ("GIT_COMMITTER_EMAIL", "nucleic@localhost"),
];

/// A work tree and the git dirs it belongs to, as the host recorded them: git is told all
/// three and discovers nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkout {
    pub work_tree: PathBuf,
    /// `GIT_DIR`: the main checkout's `.git`, or a linked worktree's admin dir
    /// `<common>/worktrees/<name>` (HEAD, index).
    pub git_dir: PathBuf,
    /// `GIT_COMMON_DIR`: objects, refs, config.
    pub common_dir: PathBuf,
    /// The empty tree of the repository's hash, read as the only source of attributes.
    pub empty_tree: &'static str,
    /// How long one command may run.
    pub deadline: Duration,
}

/// The empty tree of a repository whose object format is `format` (`sha1` / `sha256`).
pub(crate) fn empty_tree(format: &str) -> Option<&'static str> {
    match format {
        "sha1" => Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
        "sha256" => Some("6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"),
        _ => None,
    }
}

/// Where a command runs.
#[derive(Debug, Clone)]
enum Place {
    /// Only to find a repository (`Repo::open`): git discovers it from this directory.
    Discover(PathBuf),
    /// Everywhere else: explicit locations.
    At(Checkout),
}

/// The one exception to "no transport" (`push.rs`): the protocol a push to the project's
/// remote needs, settings that apply on top of [`LOCKED_CONFIG`], and what else may execute.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    /// `GIT_ALLOW_PROTOCOL`: `file`, `https` or `ssh`.
    pub protocol: &'static str,
    /// Command-line settings read after [`LOCKED_CONFIG`], so they win over it.
    pub config: Vec<(String, String)>,
    /// Files or directories that may execute besides git (Landlock).
    pub executables: Vec<PathBuf>,
}

/// One git invocation being built.
#[derive(Debug, Clone)]
pub(crate) struct GitCommand {
    place: Place,
    args: Vec<OsString>,
    envs: Vec<(&'static str, OsString)>,
    read_only: bool,
    transport: Option<Transport>,
}

/// What a finished git command produced, whatever its exit status.
#[derive(Debug)]
pub(crate) struct GitOutput {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Starts a git command on `checkout` (explicit git dir, common dir and work tree).
pub(crate) fn git(checkout: &Checkout) -> GitCommand {
    GitCommand::new(Place::At(checkout.clone()))
}

/// Starts a command that finds the repository containing `dir` (only for opening one).
pub(crate) fn discover(dir: &Path) -> GitCommand {
    GitCommand::new(Place::Discover(dir.to_path_buf()))
}

/// Git before 2.40 has no `--attr-source` and would fail every command with an unclear message;
/// this checks once per process and says so instead.
pub(crate) fn require_git_version() -> Result<()> {
    static CHECK: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    let check = CHECK.get_or_init(|| {
        spawn::count_spawn();
        let output = Command::new(spawn::git_binary())
            .arg("--version")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let version = text.strip_prefix("git version ").unwrap_or(&text);
        let mut numbers = version.split(['.', ' ']).map(|n| n.parse::<u32>().unwrap_or(0));
        let (major, minor) = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
        if (major, minor) >= (2, 40) { Ok(()) } else { Err(version.to_owned()) }
    });
    match check {
        Ok(()) => Ok(()),
        Err(found) => Err(GitError::GitTooOld { found: found.clone(), needed: "2.40" }),
    }
}

impl GitCommand {
    fn new(place: Place) -> GitCommand {
        GitCommand { place, args: Vec::new(), envs: Vec::new(), read_only: false, transport: None }
    }

    fn dir(&self) -> &Path {
        match &self.place {
            Place::Discover(dir) => dir,
            Place::At(checkout) => &checkout.work_tree,
        }
    }

    fn deadline(&self) -> Duration {
        match &self.place {
            Place::Discover(_) => DISCOVERY_DEADLINE,
            Place::At(checkout) => checkout.deadline,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Marks a query: `GIT_OPTIONAL_LOCKS=0`, so polling never takes `index.lock`.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Uses `index` instead of the checkout's real index.
    pub fn index_file(mut self, index: &Path) -> Self {
        self.envs.push(("GIT_INDEX_FILE", index.as_os_str().to_owned()));
        self
    }

    /// Allows this one command the transport of a push (`push.rs`).
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Gives throwaway snapshot commits a fixed identity, so they work without `user.name`.
    pub fn snapshot_identity(mut self) -> Self {
        for (key, value) in SNAPSHOT_IDENTITY {
            self.envs.push((key, OsString::from(value)));
        }
        self
    }

    /// The process to start: `git --no-pager [--attr-source=<empty tree>] <args>` with the
    /// locations and the locked configuration in its environment.
    fn command(&self) -> Command {
        let mut command = Command::new(spawn::git_binary());
        command.arg("--no-pager");
        for key in REPO_LOCAL_ENV {
            command.env_remove(key);
        }
        match &self.place {
            Place::Discover(dir) => {
                command.current_dir(dir);
            }
            Place::At(checkout) => {
                command
                    .arg(format!("--attr-source={}", checkout.empty_tree))
                    .current_dir(&checkout.work_tree)
                    .env("GIT_DIR", &checkout.git_dir)
                    .env("GIT_COMMON_DIR", &checkout.common_dir)
                    .env("GIT_WORK_TREE", &checkout.work_tree)
                    .env("GIT_ATTR_SOURCE", checkout.empty_tree);
            }
        }
        command.args(&self.args);
        let extra = self.transport.iter().flat_map(|t| &t.config);
        let config = LOCKED_CONFIG.iter().map(|(k, v)| (*k, *v));
        let config: Vec<(&str, &str)> =
            config.chain(extra.map(|(k, v)| (k.as_str(), v.as_str()))).collect();
        command.env("GIT_CONFIG_COUNT", config.len().to_string());
        for (i, (key, value)) in config.iter().enumerate() {
            command.env(format!("GIT_CONFIG_KEY_{i}"), key);
            command.env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        command
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", ":")
            .env("GIT_SEQUENCE_EDITOR", ":")
            .env("GIT_PAGER", "cat")
            .env("GIT_ALLOW_PROTOCOL", "")
            .env("GIT_NO_LAZY_FETCH", "1")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env_remove("GIT_EXTERNAL_DIFF");
        if self.read_only {
            command.env("GIT_OPTIONAL_LOCKS", "0");
        }
        if let Some(transport) = &self.transport {
            command.env("GIT_ALLOW_PROTOCOL", transport.protocol);
            // Only what git's transports need of the host's environment (ssh's agent socket,
            // a CA bundle); never the host's GIT_SSH / GIT_SSH_COMMAND / GIT_ASKPASS.
            for key in
                ["GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND"]
            {
                command.env_remove(key);
            }
        }
        for (key, value) in &self.envs {
            command.env(key, value);
        }
        command.stdin(Stdio::null());
        command
    }

    /// Runs the command and returns its output whatever the exit status.
    pub fn output(&self) -> Result<GitOutput> {
        let deadline = self.deadline();
        let executables =
            self.transport.as_ref().map(|t| t.executables.clone()).unwrap_or_default();
        let output =
            spawn::output_allowing(self.command(), deadline, executables).map_err(|source| {
                if source.kind() == std::io::ErrorKind::TimedOut {
                    GitError::TimedOut {
                        dir: self.dir().to_path_buf(),
                        args: self.arg_texts(),
                        after: deadline,
                    }
                } else {
                    GitError::Spawn { dir: self.dir().to_path_buf(), source }
                }
            })?;
        Ok(GitOutput {
            code: output.status.code(),
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).trim_end().to_owned(),
        })
    }

    /// Runs the command and returns its stdout; any non-zero exit is an error.
    pub fn run(&self) -> Result<Vec<u8>> {
        let output = self.output()?;
        if output.code == Some(0) { Ok(output.stdout) } else { Err(self.failure(output)) }
    }

    /// Runs the command and returns its stdout as text without the trailing newline.
    pub fn run_text(&self) -> Result<String> {
        let stdout = self.run()?;
        Ok(String::from_utf8_lossy(&stdout).trim_end_matches(['\n', '\r']).to_owned())
    }

    /// Runs a yes/no query: exit 0 is `true`, exit 1 is `false`, anything else an error.
    pub fn check(&self) -> Result<bool> {
        let output = self.output()?;
        match output.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(self.failure(output)),
        }
    }

    /// The error describing this command's failed `output`.
    pub fn failure(&self, output: GitOutput) -> GitError {
        GitError::Command {
            dir: self.dir().to_path_buf(),
            args: self.arg_texts(),
            code: output.code,
            stderr: output.stderr,
        }
    }

    fn arg_texts(&self) -> Vec<String> {
        self.args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }
}

/// Splits `-z` output into its NUL-terminated fields.
pub(crate) fn nul_fields(stdout: &[u8]) -> Vec<&[u8]> {
    let trimmed = stdout.strip_suffix(b"\0").unwrap_or(stdout);
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split(|b| *b == 0).collect()
}

/// A path as git printed it (bytes, so non-UTF-8 names survive).
pub(crate) fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// Text as git printed it, lossily decoded.
pub(crate) fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_locked_key_is_set_once() {
        let mut keys: Vec<String> = LOCKED_CONFIG.iter().map(|(k, _)| k.to_lowercase()).collect();
        keys.sort();
        let count = keys.len();
        keys.dedup();
        assert_eq!(keys.len(), count, "a key is locked twice");
    }

    #[test]
    fn the_locked_config_reaches_git() {
        let dir = std::env::temp_dir();
        let output = discover(&dir).args(["config", "--get", "core.hooksPath"]).run_text();
        assert_eq!(output.ok().as_deref(), Some("/dev/null"));
        let output = discover(&dir).args(["config", "--get", "credential.helper"]).run_text();
        assert_eq!(output.ok().as_deref(), Some(""));
    }
}
