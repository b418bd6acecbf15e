//! The single place git is spawned: fixed locale and safety settings, no inherited repo overrides.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{GitError, Result};

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

/// Identity used only for throwaway snapshot commits that no ref ever points at.
const SNAPSHOT_IDENTITY: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", "nucleic"),
    ("GIT_AUTHOR_EMAIL", "nucleic@localhost"),
    ("GIT_COMMITTER_NAME", "nucleic"),
    ("GIT_COMMITTER_EMAIL", "nucleic@localhost"),
];

/// One git invocation being built: `git -C <dir> [-c k=v]… <args>`.
#[derive(Debug, Clone)]
pub(crate) struct GitCommand {
    dir: PathBuf,
    configs: Vec<String>,
    args: Vec<OsString>,
    envs: Vec<(&'static str, OsString)>,
    read_only: bool,
}

/// What a finished git command produced, whatever its exit status.
#[derive(Debug)]
pub(crate) struct GitOutput {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Starts a git command that runs in `dir`.
pub(crate) fn git(dir: &Path) -> GitCommand {
    GitCommand {
        dir: dir.to_path_buf(),
        configs: Vec::new(),
        args: Vec::new(),
        envs: Vec::new(),
        read_only: false,
    }
}

impl GitCommand {
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

    /// A `-c key=value` placed before the subcommand.
    pub fn config(mut self, key_value: &str) -> Self {
        self.configs.push(key_value.to_owned());
        self
    }

    /// Runs hooks from nowhere: for internal plumbing-like steps (rebase replay, fast-forward of
    /// a checkout) where user hooks could block, prompt or rewrite.
    pub fn without_hooks(self) -> Self {
        self.config("core.hooksPath=/dev/null")
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

    /// Gives throwaway snapshot commits a fixed identity, so they work without `user.name`.
    pub fn snapshot_identity(mut self) -> Self {
        for (key, value) in SNAPSHOT_IDENTITY {
            self.envs.push((key, OsString::from(value)));
        }
        self
    }

    /// Runs the command and returns its output whatever the exit status.
    pub fn output(&self) -> Result<GitOutput> {
        let mut command = Command::new("git");
        command.arg("-C").arg(&self.dir).args(["-c", "core.quotepath=off"]);
        for config in &self.configs {
            command.arg("-c").arg(config);
        }
        command.args(&self.args);
        for key in REPO_LOCAL_ENV {
            command.env_remove(key);
        }
        command
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", ":")
            .env("GIT_SEQUENCE_EDITOR", ":");
        if self.read_only {
            command.env("GIT_OPTIONAL_LOCKS", "0");
        }
        for (key, value) in &self.envs {
            command.env(key, value);
        }
        command.stdin(Stdio::null());
        let output =
            command.output().map_err(|source| GitError::Spawn { dir: self.dir.clone(), source })?;
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
            dir: self.dir.clone(),
            args: self.args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            code: output.code,
            stderr: output.stderr,
        }
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
