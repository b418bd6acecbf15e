//! The `claude` and `codex` processes running now (from `/proc`), and which session each holds:
//! one that has the file open, was started on its id, or runs in its folder and wrote it last.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use nucleic_protocol::Backend;
use serde::Serialize;

use crate::OutsideSession;

/// An agent CLI process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveProcess {
    pub pid: u32,
    pub backend: Backend,
    /// `claude` or `codex`.
    pub program: String,
    pub cwd: PathBuf,
    /// How it was matched to the session it is listed on (empty in [`running_agents`]).
    pub why: String,
    #[serde(skip)]
    pub args: Vec<String>,
    /// Its open session files (`.jsonl`).
    #[serde(skip)]
    pub open: Vec<PathBuf>,
    #[serde(skip)]
    pub started: Option<SystemTime>,
}

/// Which agent CLI `args` (a command line) runs, if any: the program itself, or `node` running
/// its package's script.
fn backend_of(args: &[String]) -> Option<(Backend, &'static str)> {
    for arg in args.iter().take(3) {
        let name = Path::new(arg).file_name().map(|n| n.to_string_lossy().into_owned());
        if name.as_deref() == Some("claude") || arg.contains("@anthropic-ai/claude-code/") {
            return Some((Backend::ClaudeCode, "claude"));
        }
        if name.as_deref() == Some("codex") || arg.contains("@openai/codex/") {
            return Some((Backend::Codex, "codex"));
        }
    }
    None
}

/// The agent CLI processes running on this machine now (that this user may look at).
pub fn running_agents() -> Vec<LiveProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let me = std::process::id();
    let boot = boot_time();
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let dir = entry.path();
        let Ok(raw) = std::fs::read(dir.join("cmdline")) else { continue };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let Some((backend, program)) = backend_of(&args) else { continue };
        let Ok(cwd) = std::fs::read_link(dir.join("cwd")) else { continue };
        let open = std::fs::read_dir(dir.join("fd"))
            .map(|fds| {
                fds.flatten()
                    .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                    .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                    .collect()
            })
            .unwrap_or_default();
        let started =
            boot.and_then(|b| start_ticks(&dir).map(|t| b + Duration::from_millis(t * 10)));
        out.push(LiveProcess {
            pid,
            backend,
            program: program.into(),
            cwd,
            why: String::new(),
            args,
            open,
            started,
        });
    }
    out
}

/// The machine's boot time, to 10 ms: now less `/proc/uptime` (`btime` of `/proc/stat` is
/// whole seconds, too coarse to tell a file written just before a process from one after).
fn boot_time() -> Option<SystemTime> {
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let secs: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    SystemTime::now().checked_sub(Duration::from_secs_f64(secs))
}

/// A process's start, in clock ticks since boot (field 22 of its `stat`; 100 ticks a second).
fn start_ticks(dir: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// The process in `running` that holds `session`, and how it was told. `claimed` are processes
/// already matched by folder to a newer session (a process writes one session at a time).
pub(crate) fn holder(
    session: &OutsideSession,
    running: &[LiveProcess],
    claimed: &mut Vec<u32>,
) -> Option<LiveProcess> {
    let path = session.path.canonicalize().unwrap_or_else(|_| session.path.clone());
    let with = |p: &LiveProcess, why: String| Some(LiveProcess { why, ..p.clone() });
    let mine = || running.iter().filter(|p| p.backend == session.backend);
    if let Some(p) = mine().find(|p| p.open.contains(&path)) {
        return with(p, format!("{} (pid {}) has its file open", p.program, p.pid));
    }
    if session.id.len() >= 8
        && let Some(p) = mine().find(|p| p.args.iter().any(|a| a.contains(&session.id)))
    {
        return with(p, format!("{} (pid {}) was started on it", p.program, p.pid));
    }
    let wrote_since = |p: &LiveProcess| match (p.started, session.modified) {
        (Some(started), Some(modified)) => started <= modified,
        _ => false,
    };
    // A process holding another session's file open is writing that one.
    let free = |p: &LiveProcess| !claimed.contains(&p.pid) && p.open.is_empty();
    let p = mine().find(|p| p.cwd == session.cwd && free(p) && wrote_since(p))?;
    claimed.push(p.pid);
    with(
        p,
        format!(
            "{} (pid {}) runs in its folder and wrote to it since it started",
            p.program, p.pid
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_clis_are_told_by_program_or_package_script() {
        assert_eq!(
            backend_of(&args(&["/usr/local/bin/claude", "-p"])).map(|b| b.1),
            Some("claude")
        );
        let node = args(&["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"]);
        assert_eq!(backend_of(&node).map(|b| b.0), Some(Backend::ClaudeCode));
        let codex = args(&["node", "/x/node_modules/@openai/codex/bin/codex.js", "resume"]);
        assert_eq!(backend_of(&codex).map(|b| b.0), Some(Backend::Codex));
        assert_eq!(backend_of(&args(&["vim", "claude.md"])), None);
    }

    #[test]
    fn this_process_starts_after_boot() {
        let me = Path::new("/proc/self");
        let started = boot_time().unwrap() + Duration::from_millis(start_ticks(me).unwrap() * 10);
        assert!(started <= SystemTime::now() + Duration::from_secs(1));
    }
}
