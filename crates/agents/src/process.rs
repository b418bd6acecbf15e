//! Agent processes: spawned in their own process group with piped stdio (under bubblewrap when
//! asked, the host's variables scrubbed), found in `/proc`, and stopped as a whole tree
//! (SIGTERM, then SIGKILL after a grace period). The supervisor (`crate::supervisor`) runs them.
//!
//! stdout and stderr are plain (blocking) pipes read on dedicated threads: decoding an agent's
//! output then runs in parallel with the session writer instead of competing with it for a
//! runtime worker. Those threads end only at EOF, that is once every process holding the pipes'
//! write ends is gone — so an agent is never left half-killed (see [`AgentChild`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::io::PipeReader;

use tokio::process::{Child, Command};

use crate::error::AgentError;
use crate::isolation::{Isolation, is_host_variable, is_person_socket_variable};

/// What to start and where.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Variables added to (or overriding) the inherited environment, which never passes on the
    /// host's own (`NUCLEIC_*`, see [`is_host_variable`]).
    pub env: Vec<(OsString, OsString)>,
    /// Run under bubblewrap, the host's data dir hidden; `None` runs the program directly.
    pub isolation: Option<Isolation>,
}

/// A started agent: the child (stdin piped, async) and its output pipes (blocking).
#[derive(Debug)]
pub struct Spawned {
    pub child: AgentChild,
    pub stdout: PipeReader,
    pub stderr: PipeReader,
}

/// An agent's process. Dropped while it still runs (its supervisor cancelled, e.g. when the
/// runtime shuts down), it takes its whole tree down with SIGKILL — not only itself, as tokio's
/// `kill_on_drop` would: the `codex` npm entry is a Node wrapper that spawns the native binary,
/// which then survived, holding the output pipes open, so the reader threads never saw EOF and
/// the runtime's shutdown waited for them forever. Under bubblewrap the agent is bwrap's
/// descendant and would outlive bwrap the same way.
#[derive(Debug)]
pub struct AgentChild(Child);

impl std::ops::Deref for AgentChild {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for AgentChild {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for AgentChild {
    fn drop(&mut self) {
        // `id()` is `None` once the child was reaped; `try_wait` reaps it if it just exited.
        // Only a live (or unreaped) leader guarantees its pid still names this tree.
        if let (Some(pid), Ok(None)) = (self.0.id(), self.0.try_wait()) {
            kill_tree(pid);
        }
    }
}

/// Starts `spec` in a new process group (pgid = its pid) with stdin, stdout and stderr piped,
/// under `bwrap` when it asks for isolation (the pid is then bwrap's: the agent is its
/// descendant, so stopping the tree still reaches it).
pub fn spawn_group(spec: &SpawnSpec) -> Result<Spawned, AgentError> {
    let (stdout, stdout_writer) = std::io::pipe().map_err(|e| pipe_error(spec, &e))?;
    let (stderr, stderr_writer) = std::io::pipe().map_err(|e| pipe_error(spec, &e))?;
    let (command, program) = group_command(spec, stdout_writer, stderr_writer)?;
    let mut cmd = Command::from(command);
    cmd.kill_on_drop(true);
    // `cmd` (holding the pipes' write ends) is dropped on return, so EOF follows the child's exit.
    let child = cmd.spawn().map_err(|e| spawn_error(program, &e))?;
    Ok(Spawned { child: AgentChild(child), stdout, stderr })
}

fn pipe_error(spec: &SpawnSpec, e: &std::io::Error) -> AgentError {
    AgentError::Spawn {
        program: spec.program.clone(),
        reason: format!("cannot create a pipe: {e}"),
    }
}

/// The spawn failure of `program`, in words.
pub(crate) fn spawn_error(program: PathBuf, e: &std::io::Error) -> AgentError {
    AgentError::Spawn {
        program,
        reason: match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".into(),
            std::io::ErrorKind::PermissionDenied => "not executable (permission denied)".into(),
            _ => e.to_string(),
        },
    }
}

/// The command that starts `spec` in a new process group with stdin piped and stdout, stderr
/// going to the given pipes, under bubblewrap when it asks for isolation; and the program run.
pub(crate) fn group_command(
    spec: &SpawnSpec,
    stdout_writer: std::io::PipeWriter,
    stderr_writer: std::io::PipeWriter,
) -> Result<(std::process::Command, PathBuf), AgentError> {
    if !spec.cwd.is_dir() {
        return Err(AgentError::Spawn {
            program: spec.program.clone(),
            reason: format!("working directory {} does not exist", spec.cwd.display()),
        });
    }
    if spec.isolation.is_some() {
        // Inside the sandbox a missing program would only be an exit code: say it now.
        check_runnable(&spec.program)?;
    }
    let (program, args) = match &spec.isolation {
        Some(isolation) => {
            let ids = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
            let inside = sandboxed_program(&spec.program, isolation);
            (isolation.bwrap.clone(), isolation.args(&inside, &spec.args, &spec.cwd, ids))
        }
        None => (spec.program.clone(), spec.args.clone()),
    };
    let mut cmd = std::process::Command::new(&program);
    let confined = spec.isolation.is_some();
    let scrubbed = |name: &std::ffi::OsStr| {
        is_host_variable(name) || (confined && is_person_socket_variable(name))
    };
    for (name, _) in std::env::vars_os().filter(|(name, _)| scrubbed(name)) {
        cmd.env_remove(name);
    }
    cmd.args(&args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(stdout_writer)
        .stderr(stderr_writer);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    Ok((cmd, program))
}

/// The file `program` (a path, or a name on `PATH`) really is, symlinks resolved: what a sandbox
/// runs, since the link may live where the sandbox hides (`~/.local/bin/claude` pointing into
/// `~/.local/share/claude/versions/…`, a temporary `bin` folder) while its target is bound in.
fn sandboxed_program(program: &Path, isolation: &crate::isolation::Isolation) -> PathBuf {
    let found =
        if program.components().count() > 1 { Some(program.to_owned()) } else { which(program) };
    match found {
        // Shown inside: run as asked (the command line others look at stays the same).
        Some(path) if isolation.shows(&path) => path,
        _ => real_program(program).unwrap_or_else(|| program.to_owned()),
    }
}

/// The file `program` (a path, or a name on `PATH`) resolves to, symlinks followed.
pub fn real_program(program: &Path) -> Option<PathBuf> {
    let found =
        if program.components().count() > 1 { Some(program.to_owned()) } else { which(program) };
    found.and_then(|p| p.canonicalize().ok())
}

/// Fails as a spawn would if `program` (a path, or a name on `PATH`) is missing or not executable.
fn check_runnable(program: &Path) -> Result<(), AgentError> {
    use std::os::unix::fs::PermissionsExt;
    let found =
        if program.components().count() > 1 { Some(program.to_owned()) } else { which(program) };
    let refuse =
        |reason: &str| AgentError::Spawn { program: program.to_owned(), reason: reason.into() };
    let meta =
        found.and_then(|p| std::fs::metadata(p).ok()).ok_or_else(|| refuse("no such file"))?;
    if meta.is_dir() || meta.permissions().mode() & 0o111 == 0 {
        return Err(refuse("not executable (permission denied)"));
    }
    Ok(())
}

/// Sends `signal` to the whole process group `pgid`. A group that is already gone is not an error.
pub fn signal_group(pgid: u32, signal: Signal) {
    if let Ok(raw) = i32::try_from(pgid) {
        // ESRCH (no such group) just means everything already exited.
        let _ = killpg(Pid::from_raw(raw), signal);
    }
}

/// Stops `pid`, its process group, and every descendant — including those that left the group.
/// Claude Code starts each Bash tool command in a session of its own (`setsid`), so signalling
/// the CLI's group alone would orphan them. SIGTERM now; SIGKILL after `grace` to whatever of
/// the tree (as seen now or then) is still alive.
pub fn terminate_tree(pid: u32, grace: Duration) {
    let mut tree = vec![pid];
    tree.extend(descendants(pid));
    signal_tree(&tree, Signal::SIGTERM);
    tokio::spawn(async move {
        tokio::time::sleep(grace).await;
        let mut now = tree.clone();
        for p in &tree {
            now.extend(descendants(*p));
        }
        signal_tree(&now, Signal::SIGKILL);
    });
}

/// SIGKILLs `pid`, its process group and every descendant now.
pub fn kill_tree(pid: u32) {
    let mut tree = vec![pid];
    tree.extend(descendants(pid));
    signal_tree(&tree, Signal::SIGKILL);
}

/// SIGKILLs every descendant of `pid` (not `pid` itself, nor its process group), one by one: for
/// a process that must exit at once and take no child with it. Looks twice, for children forked
/// while the first ones were being killed. Returns the pids signalled.
pub fn kill_descendants(pid: u32) -> Vec<u32> {
    let mut killed = Vec::new();
    for _ in 0..2 {
        for p in descendants(pid) {
            if let Ok(raw) = i32::try_from(p) {
                let _ = nix::sys::signal::kill(Pid::from_raw(raw), Signal::SIGKILL);
                if !killed.contains(&p) {
                    killed.push(p);
                }
            }
        }
    }
    killed
}

/// [`terminate_tree`] for a blocking thread: waits out `grace` itself.
pub fn terminate_tree_blocking(pid: u32, grace: Duration) {
    let mut tree = vec![pid];
    tree.extend(descendants(pid));
    signal_tree(&tree, Signal::SIGTERM);
    std::thread::sleep(grace);
    signal_tree(&tree, Signal::SIGKILL);
}

fn signal_tree(pids: &[u32], signal: Signal) {
    let mut groups: Vec<u32> = pids.iter().filter_map(|p| proc_stat(*p).map(|s| s.pgrp)).collect();
    groups.sort_unstable();
    groups.dedup();
    for g in groups {
        signal_group(g, signal);
    }
    for p in pids {
        if let Ok(raw) = i32::try_from(*p) {
            let _ = nix::sys::signal::kill(Pid::from_raw(raw), signal);
        }
    }
}

/// The fields of `/proc/<pid>/stat` this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    pub pgrp: u32,
    pub zombie: bool,
    /// Field 22 (`starttime`): with the pid, tells a process from a later one reusing its pid.
    pub start_ticks: u64,
}

/// Reads `/proc/<pid>/stat` (`None` when the process is gone).
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may contain spaces: parse after the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // `starttime` is field 22; `pgrp` was field 5.
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(ProcStat { ppid, pgrp, zombie: state == "Z", start_ticks })
}

/// Whether `pid` runs (not a zombie) and is the process that started at `start_ticks` — not a
/// later one that reuses its pid.
pub fn is_running(pid: u32, start_ticks: u64) -> bool {
    proc_stat(pid).is_some_and(|s| !s.zombie && s.start_ticks == start_ticks)
}

/// Every live descendant of `pid` (children, grandchildren, …), from `/proc`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| proc_stat(p).filter(|s| !s.zombie).map(|s| (p, s.ppid)))
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (child, ppid) in &parents {
            if *ppid == parent && !found.contains(child) {
                found.push(*child);
                frontier.push(*child);
            }
        }
    }
    found
}

/// Finds `name` on `PATH` (or returns it as is when it contains a slash).
pub fn which(name: &Path) -> Option<PathBuf> {
    if name.components().count() > 1 {
        return name.is_file().then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_runs_the_file_a_link_points_at_when_the_link_is_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("versions/2.1/claude");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, "#!/bin/sh\n").unwrap();
        let link = dir.path().join("bin/claude");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("../versions/2.1/claude", &link).unwrap();
        let mut isolation = crate::isolation::Isolation::new("/usr/bin/bwrap".into());
        // Under the fresh /tmp inside, the link is not there: the file it points at runs.
        assert_eq!(sandboxed_program(&link, &isolation), target.canonicalize().unwrap());
        // Bound back, it is run as asked (its command line unchanged).
        isolation.mounts.push(crate::isolation::Mount::ReadOnly(dir.path().to_owned()));
        assert_eq!(sandboxed_program(&link, &isolation), link);
        let sh = which(Path::new("sh")).unwrap();
        assert_eq!(sandboxed_program(Path::new("sh"), &isolation), sh, "found on PATH, shown");
        isolation.mounts.push(crate::isolation::Mount::Hide(sh.parent().unwrap().to_owned()));
        assert_eq!(sandboxed_program(Path::new("sh"), &isolation), sh.canonicalize().unwrap());
        let missing = Path::new("/no/such/agent");
        assert_eq!(sandboxed_program(missing, &isolation), missing, "left for the spawn error");
    }

    #[tokio::test]
    async fn terminate_tree_reaches_children_in_other_sessions() {
        let spec = SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "setsid sleep 300 & sleep 300".into()],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            isolation: None,
        };
        let mut child = spawn_group(&spec).unwrap().child;
        let pid = child.id().unwrap();
        let me = proc_stat(std::process::id()).unwrap();
        let stat = proc_stat(pid).unwrap();
        assert!(stat.start_ticks >= me.start_ticks, "a child starts after its parent");
        // Wait (generously: tests run in parallel) for the child that left the group.
        let mut kids = Vec::new();
        for _ in 0..250 {
            kids = descendants(pid);
            if kids.iter().any(|k| proc_stat(*k).is_some_and(|s| s.pgrp != pid)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            kids.iter().any(|k| proc_stat(*k).is_some_and(|s| s.pgrp != pid)),
            "one child should have left the group: {kids:?}"
        );
        terminate_tree(pid, Duration::from_millis(200));
        child.wait().await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        for k in kids {
            assert!(proc_stat(k).is_none_or(|s| s.zombie), "{k} survived");
        }
    }

    #[tokio::test]
    async fn a_dropped_child_takes_its_tree_and_the_pipes_with_it() {
        // Like the `codex` Node wrapper: the agent's direct child holds the output pipes too.
        let spec = SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "sleep 300 & wait".into()],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            isolation: None,
        };
        let Spawned { child, mut stdout, .. } = spawn_group(&spec).unwrap();
        let pid = child.id().unwrap();
        let mut kids = Vec::new();
        for _ in 0..250 {
            kids = descendants(pid);
            if !kids.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!kids.is_empty(), "sh should have started its sleep");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = std::io::Read::read_to_end(&mut stdout, &mut Vec::new());
            let _ = tx.send(());
        });
        drop(child);
        rx.recv_timeout(Duration::from_secs(5)).expect("stdout reaches EOF once the tree is gone");
        // A killed process closes its files a moment before it turns into a zombie.
        let gone = |k: &u32| proc_stat(*k).is_none_or(|s| s.zombie);
        for _ in 0..100 {
            if kids.iter().all(gone) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(kids.iter().all(gone), "survived: {kids:?}");
    }

    #[tokio::test]
    async fn a_dropped_child_under_bubblewrap_takes_the_sandbox_with_it() {
        let Some(bwrap) = which(Path::new("bwrap")) else {
            eprintln!("bubblewrap is not installed: nothing to test");
            return;
        };
        let spec = SpawnSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "sleep 300 & sleep 300".into()],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            isolation: Some(Isolation::new(bwrap)),
        };
        let spawned = spawn_group(&spec).unwrap();
        let pid = spawned.child.id().unwrap();
        // bwrap's init in the new pid namespace, the shell and both sleeps.
        let mut kids = Vec::new();
        for _ in 0..250 {
            kids = descendants(pid);
            if kids.len() >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(kids.len(), 4, "{kids:?}");
        drop(spawned);
        let gone = |k: &u32| proc_stat(*k).is_none_or(|s| s.zombie);
        for _ in 0..100 {
            if kids.iter().all(gone) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(kids.iter().all(gone), "survived: {kids:?}");
    }
}
