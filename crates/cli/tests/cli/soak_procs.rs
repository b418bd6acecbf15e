//! Processes a soak left behind: anything whose working directory is inside the soak's repository
//! (its sessions' worktrees) once the last host stopped.

use std::path::Path;

/// SIGKILLs every process whose working directory is under `root`; returns how many there were.
pub(crate) fn stop_processes_under(root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    let mut stopped = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let in_root =
            std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(root));
        if in_root && pid != std::process::id() as i32 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            stopped += 1;
        }
    }
    stopped
}
