//! Keeping the host's own data out of an agent's reach: the environment variables an agent never
//! inherits, and the bubblewrap (`bwrap`) command line that runs it in private mount and pid
//! namespaces where the host's data dir is an empty tmpfs.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Inherited variables whose name starts with this are the host's and never reach an agent
/// (`NUCLEIC_HOME` says where the token is). Variables a launch sets explicitly still do.
pub const HOST_VARIABLE_PREFIX: &str = "NUCLEIC_";

/// Whether an inherited variable is the host's own (see [`HOST_VARIABLE_PREFIX`]).
pub fn is_host_variable(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(HOST_VARIABLE_PREFIX.as_bytes())
}

/// An agent run under bubblewrap. The whole filesystem stays as it is (the agent works as the
/// person would, devices included) except `hide`, each covered by an empty tmpfs; `/proc` is
/// the sandbox's own, so no process outside it (whose `/proc/<pid>/root` would lead back to the
/// real filesystem) can be seen, and the agent gets a session of its own (no `TIOCSTI` into the
/// host's terminal). Run by a person, bubblewrap makes a user namespace and the agent holds no
/// capability, so it cannot unmount the tmpfs. A host running as root keeps its agents' root
/// capabilities (Codex's own bubblewrap sandbox needs them to nest): root can undo this.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Isolation {
    /// The `bwrap` executable.
    pub bwrap: PathBuf,
    /// Directories the agent must not see.
    pub hide: Vec<PathBuf>,
    /// Directories inside a hidden one that stay visible (bound back in): a project kept inside
    /// the data dir, as `nucleic demo --home` does.
    pub expose: Vec<PathBuf>,
}

impl Isolation {
    /// The `bwrap` arguments that run `program args` in `cwd`.
    pub fn args(&self, program: &Path, args: &[OsString], cwd: &Path) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        let mut push = |items: &[&OsStr]| out.extend(items.iter().map(|s| s.to_os_string()));
        push(&["--dev-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
        push(&["--unshare-pid".as_ref(), "--proc".as_ref(), "/proc".as_ref()]);
        for dir in &self.hide {
            push(&["--tmpfs".as_ref(), dir.as_os_str()]);
        }
        for dir in &self.expose {
            push(&["--bind".as_ref(), dir.as_os_str(), dir.as_os_str()]);
        }
        push(&["--new-session".as_ref()]);
        push(&["--chdir".as_ref(), cwd.as_os_str(), "--".as_ref(), program.as_os_str()]);
        out.extend(args.iter().cloned());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_variables_are_the_nucleic_ones() {
        assert!(is_host_variable("NUCLEIC_HOME".as_ref()));
        assert!(is_host_variable("NUCLEIC_SIM_FAULT".as_ref()));
        assert!(!is_host_variable("HOME".as_ref()));
        assert!(!is_host_variable("MY_NUCLEIC_HOME".as_ref()));
    }

    #[test]
    fn the_command_line_hides_then_exposes_then_runs_the_program() {
        let isolation = Isolation {
            bwrap: "/usr/bin/bwrap".into(),
            hide: vec!["/data/nucleic".into()],
            expose: vec!["/data/nucleic/repo".into()],
        };
        let args = isolation.args(Path::new("/bin/claude"), &["-p".into()], Path::new("/w"));
        let joined = args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
        assert_eq!(
            joined,
            "--dev-bind / / --unshare-pid --proc /proc --tmpfs /data/nucleic \
             --bind /data/nucleic/repo /data/nucleic/repo --new-session --chdir /w -- \
             /bin/claude -p"
        );
    }
}
