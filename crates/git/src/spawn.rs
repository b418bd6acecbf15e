//! How every git process is started and awaited: confined where Linux has Landlock, and killed
//! with everything it started when it outlives its deadline.
//!
//! Confined, git — and everything it starts — may execute only the git binary, git's exec-path
//! and the dynamic loader: whatever a config file, an attributes file or a hook directory says,
//! no other program can start. Landlock restricts a thread and what it starts, so each git
//! process is spawned from a short-lived thread that restricts itself first; the host's other
//! threads stay unrestricted.
//!
//! The deadline bounds what the agent could otherwise stall for good: a config `include.path`
//! naming a FIFO blocks git reading its configuration forever.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Whether host git calls run with exec confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecConfinement {
    /// Git may execute only itself (its binary, its exec-path, its loader).
    Enforced,
    /// Not here; the reason (no Landlock in this kernel, not Linux, git is a script…).
    /// Git calls still have every setting that runs a program switched off.
    Unavailable(String),
}

/// Whether host git calls are confined on this machine (decided once per process).
pub fn exec_confinement() -> ExecConfinement {
    imp::status()
}

/// Git processes started by this process so far (every one, whatever for).
static SPAWNED: AtomicU64 = AtomicU64::new(0);

/// How many git processes this process has started so far: every command the runner ran, the
/// one-time version check and confinement probe included. Benches read it to count the
/// processes an operation costs.
pub fn git_processes() -> u64 {
    SPAWNED.load(Ordering::Relaxed)
}

/// Counts one git process about to start.
pub(crate) fn count_spawn() {
    SPAWNED.fetch_add(1, Ordering::Relaxed);
}

/// The git binary every host git call runs: the first executable `git` on `PATH` when the
/// process first needed it, resolved to an absolute path (no `PATH` walk at every call); plain
/// `git` when there is none, which then fails to start with a clear error.
pub(crate) fn git_binary() -> &'static Path {
    static GIT: OnceLock<PathBuf> = OnceLock::new();
    GIT.get_or_init(|| which_git().unwrap_or_else(|| PathBuf::from("git")))
}

/// The `git` that `Command::new("git")` would run: the first executable on `PATH`, resolved.
fn which_git() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("git")).find_map(|candidate| {
        let meta = std::fs::metadata(&candidate).ok()?;
        let executable = meta.is_file() && meta.permissions().mode() & 0o111 != 0;
        executable.then(|| std::fs::canonicalize(&candidate).ok()).flatten()
    })
}

/// What the spawning thread reports.
enum Progress {
    Started(u32),
    Done(io::Result<Output>),
}

/// Runs `command` to completion (stdin as set, stdout and stderr captured), confined when
/// available, in a process group of its own that is killed after `deadline`
/// ([`io::ErrorKind::TimedOut`]).
#[cfg(test)]
pub(crate) fn output(command: Command, deadline: Duration) -> io::Result<Output> {
    output_allowing(command, deadline, Vec::new())
}

/// [`output`], with `also_executable` (files or directories) allowed to execute as well: only
/// for the push exception (`push.rs`), which needs a shell or ssh and the remote's hooks.
pub(crate) fn output_allowing(
    mut command: Command,
    deadline: Duration,
    also_executable: Vec<PathBuf>,
) -> io::Result<Output> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    count_spawn();
    let (report, progress) = mpsc::channel();
    std::thread::Builder::new().name("git".into()).spawn(move || {
        let child = imp::confine_this_thread(&also_executable).and_then(|()| command.spawn());
        let child = match child {
            Ok(child) => child,
            Err(e) => {
                let _ = report.send(Progress::Done(Err(e)));
                return;
            }
        };
        let _ = report.send(Progress::Started(child.id()));
        let _ = report.send(Progress::Done(child.wait_with_output()));
    })?;
    let until = Instant::now() + deadline;
    let mut group = None;
    loop {
        match progress.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Progress::Started(pid)) => group = Some(pid),
            Ok(Progress::Done(result)) => return result,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("the thread running git ended without a result"));
            }
            Err(RecvTimeoutError::Timeout) => break,
        }
    }
    if let Some(pgid) = group {
        kill_process_group(pgid);
        // Let the thread reap it (the pipes close once the whole group is gone).
        let _ = progress.recv_timeout(Duration::from_secs(5));
    }
    let message = format!("git did not finish within {deadline:?} and was killed");
    Err(io::Error::new(io::ErrorKind::TimedOut, message))
}

/// SIGKILLs the process group `pgid` (its leader was started with `process_group(0)`).
/// Uses `kill(1)` because std has no killpg and `unsafe` is not allowed here.
pub(crate) fn kill_process_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output, Stdio};
    use std::sync::OnceLock;

    use landlock::{
        AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreated, RulesetCreatedAttr,
    };

    use super::ExecConfinement;

    /// The ruleset every git process gets, built once; `Err` says why there is none.
    fn ruleset() -> &'static Result<RulesetCreated, String> {
        static RULESET: OnceLock<Result<RulesetCreated, String>> = OnceLock::new();
        RULESET.get_or_init(|| {
            let allowed = executables()?;
            // A Landlock domain that does not handle `Refer` denies every rename or link into
            // another directory (EXDEV), which git needs (`branch -m` moves reflogs, `worktree
            // move`): handle it and allow it everywhere, where the kernel knows it (ABI 2+).
            let with_refer = Ruleset::default()
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessFs::Execute | AccessFs::Refer)
                .and_then(Ruleset::create);
            let (ruleset, refer) = match with_refer {
                Ok(ruleset) => (ruleset, true),
                Err(_) => Ruleset::default()
                    .set_compatibility(CompatLevel::HardRequirement)
                    .handle_access(AccessFs::Execute)
                    .and_then(Ruleset::create)
                    .map(|ruleset| (ruleset, false))
                    .map_err(|e| format!("Landlock is not available: {e}"))?,
            };
            let mut rules = Vec::new();
            for path in &allowed {
                let fd = PathFd::new(path).map_err(|e| format!("cannot open {path:?}: {e}"))?;
                rules.push(PathBeneath::new(fd, AccessFs::Execute));
            }
            if refer {
                let root = PathFd::new("/").map_err(|e| format!("cannot open /: {e}"))?;
                rules.push(PathBeneath::new(root, AccessFs::Refer));
            }
            let ruleset = ruleset
                .add_rules(rules.into_iter().map(Ok::<_, landlock::RulesetError>))
                .map_err(|e| format!("cannot build the Landlock ruleset: {e}"))?;
            // Prove it works before relying on it: a restricted thread runs git.
            std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        super::count_spawn();
                        let mut probe = Command::new(super::git_binary());
                        probe.arg("--version").stdout(Stdio::null());
                        run_restricted(&ruleset, probe)
                    })
                    .join()
                    .map_err(|_| "the Landlock probe panicked".to_owned())?
                    .map_err(|e| format!("git does not run under Landlock: {e}"))
                    .and_then(|out| {
                        if out.status.success() {
                            Ok(())
                        } else {
                            Err(format!("git --version failed under Landlock: {}", out.status))
                        }
                    })
            })?;
            Ok(ruleset)
        })
    }

    pub(super) fn status() -> ExecConfinement {
        match ruleset() {
            Ok(_) => ExecConfinement::Enforced,
            Err(reason) => ExecConfinement::Unavailable(reason.clone()),
        }
    }

    /// Restricts the calling thread, for good, when confinement is available; `also` may
    /// execute too.
    pub(super) fn confine_this_thread(also: &[PathBuf]) -> io::Result<()> {
        match ruleset() {
            Ok(ruleset) if also.is_empty() => restrict(ruleset),
            Ok(ruleset) => {
                let mut rules = Vec::new();
                for path in also {
                    rules.push(PathBeneath::new(
                        PathFd::new(path).map_err(io::Error::other)?,
                        AccessFs::Execute,
                    ));
                }
                let wider = ruleset
                    .try_clone()?
                    .add_rules(rules.into_iter().map(Ok::<_, landlock::RulesetError>))
                    .map_err(io::Error::other)?;
                restrict(&wider)
            }
            Err(_) => Ok(()),
        }
    }

    fn restrict(ruleset: &RulesetCreated) -> io::Result<()> {
        let status = ruleset.try_clone()?.restrict_self().map_err(io::Error::other)?;
        if status.ruleset == landlock::RulesetStatus::FullyEnforced {
            Ok(())
        } else {
            Err(io::Error::other(format!("Landlock not enforced: {status:?}")))
        }
    }

    /// Restricts the calling thread (for good: call it on a thread of its own), then runs.
    fn run_restricted(ruleset: &RulesetCreated, mut command: Command) -> io::Result<Output> {
        restrict(ruleset)?;
        command.output()
    }

    /// What git needs to execute: its binary, its exec-path (sub-commands) and the dynamic
    /// loader named in the binary.
    fn executables() -> Result<Vec<PathBuf>, String> {
        let git = super::git_binary().to_path_buf();
        if !git.is_absolute() {
            return Err("git is not on PATH".to_owned());
        }
        let binary = std::fs::read(&git).map_err(|e| format!("cannot read {git:?}: {e}"))?;
        if binary.starts_with(b"#!") {
            return Err(format!("{git:?} is a script, not the git binary"));
        }
        let output = Command::new(&git)
            .arg("--exec-path")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {git:?}: {e}"))?;
        let exec_path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let exec_path = std::fs::canonicalize(&exec_path)
            .map_err(|e| format!("git's exec-path {exec_path:?}: {e}"))?;
        let mut allowed = vec![git, exec_path];
        if let Some(loader) = elf_interpreter(&binary) {
            let loader =
                std::fs::canonicalize(&loader).map_err(|e| format!("loader {loader:?}: {e}"))?;
            allowed.push(loader);
        }
        Ok(allowed)
    }

    /// The program interpreter (`PT_INTERP`) of an ELF executable; `None` for a static one.
    pub(super) fn elf_interpreter(elf: &[u8]) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStrExt;
        if elf.get(..4)? != b"\x7fELF" {
            return None;
        }
        let wide = *elf.get(4)? == 2;
        let little = *elf.get(5)? == 1;
        let int = |at: usize, len: usize| -> Option<usize> {
            let bytes = elf.get(at..at + len)?;
            let mut value = 0u64;
            for i in 0..len {
                let byte = if little { bytes[len - 1 - i] } else { bytes[i] };
                value = value << 8 | u64::from(byte);
            }
            usize::try_from(value).ok()
        };
        let word = if wide { 8 } else { 4 };
        let (phoff, phentsize, phnum) = if wide {
            (int(0x20, 8)?, int(0x36, 2)?, int(0x38, 2)?)
        } else {
            (int(0x1c, 4)?, int(0x2a, 2)?, int(0x2c, 2)?)
        };
        const PT_INTERP: usize = 3;
        (0..phnum).find_map(|i| {
            let header = phoff + i * phentsize;
            if int(header, 4)? != PT_INTERP {
                return None;
            }
            let (offset, size) = if wide {
                (int(header + 8, word)?, int(header + 0x20, word)?)
            } else {
                (int(header + 4, word)?, int(header + 0x10, word)?)
            };
            let name = elf.get(offset..offset + size)?;
            let name = name.split(|b| *b == 0).next()?;
            Some(Path::new(std::ffi::OsStr::from_bytes(name)).to_path_buf())
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;

    use super::ExecConfinement;

    pub(super) fn status() -> ExecConfinement {
        ExecConfinement::Unavailable("exec confinement needs Linux (Landlock)".to_owned())
    }

    pub(super) fn confine_this_thread(_also: &[std::path::PathBuf]) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_loader_of_this_test_binary_is_found() {
        let me = std::fs::read("/proc/self/exe").unwrap_or_default();
        let loader = imp::elf_interpreter(&me);
        // Rust test binaries on glibc are dynamically linked; a static build has no loader.
        if let Some(loader) = loader {
            assert!(loader.is_absolute() && loader.exists(), "{loader:?}");
        }
        assert_eq!(imp::elf_interpreter(b"#!/bin/sh\n"), None);
    }

    #[test]
    fn a_confined_git_cannot_start_a_shell() {
        if let ExecConfinement::Unavailable(reason) = exec_confinement() {
            eprintln!("skipped: {reason}");
            return;
        }
        let minute = Duration::from_secs(60);
        let mut command = Command::new("git");
        command.args(["-c", "alias.sh=!true", "sh"]);
        let out = output(command, minute).unwrap_or_else(|e| panic!("git did not run: {e}"));
        assert!(!out.status.success(), "a shell alias ran under confinement");
        let mut command = Command::new("git");
        command.arg("--version");
        assert!(output(command, minute).is_ok_and(|o| o.status.success()));
    }

    #[test]
    fn a_process_past_its_deadline_is_killed_with_its_group() {
        let started = Instant::now();
        // Git reading a config include that is a FIFO with no writer waits forever.
        let dir = std::env::temp_dir().join(format!("nucleic-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let fifo = dir.join("config");
        let made = Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let mut command = Command::new("git");
        command
            .arg("-c")
            .arg(format!("include.path={}", fifo.display()))
            .args(["config", "--list"]);
        let result = output(command, Duration::from_millis(300));
        let _ = std::fs::remove_dir_all(&dir);
        let error = result.err().map(|e| e.kind());
        assert_eq!(error, Some(io::ErrorKind::TimedOut));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    }
}
