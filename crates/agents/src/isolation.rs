//! The agent's confinement, as a bubblewrap (`bwrap`) command line: a read-only machine with the
//! person's secrets absent, writes only where the host allows, its own network namespace whose
//! only way out is the host's egress proxy, and no privilege (a user namespace, every capability
//! dropped, also when the host runs as root). Plus the variables an agent never inherits.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Inherited variables whose name starts with this are the host's and never reach an agent
/// (`NUCLEIC_HOME` says where the token is). Variables a launch sets explicitly still do.
pub const HOST_VARIABLE_PREFIX: &str = "NUCLEIC_";

/// Inherited variables that lead to the person's own sockets and sessions (agents, keyrings,
/// displays, terminal multiplexers, container engines): a confined agent never inherits them.
pub const PERSON_SOCKET_VARIABLES: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "GNOME_KEYRING_CONTROL",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "KRB5CCNAME",
    "XDG_RUNTIME_DIR",
];

/// Where the host's egress socket directory appears inside the sandbox.
pub const SANDBOX_EGRESS_DIR: &str = "/run/nucleic-egress";
/// The proxy socket's file name in that directory.
pub const EGRESS_SOCKET_NAME: &str = "proxy.sock";
/// The hidden entry point of the `nucleic` binary that runs the network bridge, then the agent.
pub const CONFINE_ENTRY: &str = "__confine";
/// The user id a confined agent has when the host is root (root inside a user namespace could
/// not nest one — Codex's own sandbox does — and needs no such identity).
pub const ROOT_HOST_SANDBOX_ID: u32 = 1000;

/// Whether an inherited variable is the host's own (see [`HOST_VARIABLE_PREFIX`]).
pub fn is_host_variable(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(HOST_VARIABLE_PREFIX.as_bytes())
}

/// Whether an inherited variable leads to one of the person's sockets
/// ([`PERSON_SOCKET_VARIABLES`]).
pub fn is_person_socket_variable(name: &OsStr) -> bool {
    PERSON_SOCKET_VARIABLES.iter().any(|v| OsStr::new(v) == name)
}

/// An agent run under bubblewrap. The root filesystem is bound read-only; `/dev`, `/proc`,
/// `/tmp`, `/var/tmp`, `/dev/shm` and `/run` are the sandbox's own; then `mounts`, in order (a
/// later one covers an earlier one below it: a writable worktree inside a read-only checkout,
/// a read-only `.git/config` inside writable git dirs). Paths that do not exist are skipped. The
/// agent has its own user (no capability, no new privilege), pid, IPC, UTS and network
/// namespaces; with `network`, the bridge in its loopback leads to the host's proxy, else it has
/// no network at all.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Isolation {
    /// The `bwrap` executable.
    pub bwrap: PathBuf,
    pub mounts: Vec<Mount>,
    /// The way out: `None` leaves the agent with no network at all.
    pub network: Option<NetworkBridge>,
    /// Variables set inside (git's settings).
    pub env: Vec<(String, String)>,
    /// Files given to the agent as private copies (`(source, destination)`): it reads and
    /// rewrites its copy, and nothing it writes reaches the source. Made by the bridge, so only
    /// with `network`.
    #[serde(default)]
    pub copies: Vec<(PathBuf, PathBuf)>,
    /// Read-only files (also in `mounts`) the host makes, empty, before the start when they
    /// are missing: bwrap binds only what exists, and the agent could otherwise create them.
    #[serde(default)]
    pub made_first: Vec<PathBuf>,
}

/// Where the sources of [`Isolation::copies`] are bound inside, one numbered file each.
pub const SANDBOX_COPIES_DIR: &str = "/run/nucleic-copies";

/// One path of the sandbox's view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "path", rename_all = "camelCase")]
pub enum Mount {
    /// Absent: a directory becomes an empty tmpfs, a file an empty one.
    Hide(PathBuf),
    /// Bound back read-only.
    ReadOnly(PathBuf),
    /// Bound back writable.
    Writable(PathBuf),
}

impl Mount {
    /// The path this mount is about.
    pub fn path(&self) -> &Path {
        match self {
            Mount::Hide(p) | Mount::ReadOnly(p) | Mount::Writable(p) => p,
        }
    }
}

/// The agent's only way out: a bridge (`nucleic __confine`, run inside the sandbox before the
/// agent) listening on loopback in the agent's network namespace and relaying to the host's
/// egress proxy over a Unix socket in a directory bound into the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetworkBridge {
    /// The `nucleic` executable (its [`CONFINE_ENTRY`] runs the bridge).
    pub program: PathBuf,
    /// The host directory holding the proxy's socket, seen inside as [`SANDBOX_EGRESS_DIR`]
    /// (a directory, so a restarted host's new socket is seen by an agent that kept running).
    pub socket_dir: PathBuf,
    /// The HTTP proxy's port on the sandbox's loopback (`HTTPS_PROXY` points there).
    pub proxy_port: u16,
    /// Loopback endpoints (`127.0.0.1:PORT`) of the host's machine the agent reaches at the same
    /// address inside (a model server on loopback), each through the proxy.
    pub forwards: Vec<String>,
    /// What the host's proxy lets through for it (`host:port`, `*.domain`): not used inside,
    /// carried so the host serving the proxy (again, after a restart) knows.
    #[serde(default)]
    pub allowed: Vec<String>,
}

/// The folders every sandbox gets empty and its own.
const FRESH_DIRS: [&str; 4] = ["/tmp", "/var/tmp", "/dev/shm", "/run"];

impl Isolation {
    /// An isolation with only `bwrap` set: the read-only machine, nothing writable, no network.
    pub fn new(bwrap: PathBuf) -> Isolation {
        Isolation {
            bwrap,
            mounts: Vec::new(),
            network: None,
            env: Vec::new(),
            copies: Vec::new(),
            made_first: Vec::new(),
        }
    }

    /// Whether `path` is there inside, as it is outside: not under the fresh `/tmp`-like
    /// folders, nor under a hidden path that no later mount binds back (mounts apply in order).
    pub fn shows(&self, path: &Path) -> bool {
        let mut shown = !FRESH_DIRS.iter().any(|d| path.starts_with(d));
        for mount in &self.mounts {
            if path.starts_with(mount.path()) {
                shown = !matches!(mount, Mount::Hide(_));
            }
        }
        shown
    }

    /// Whether the agent may write `path` (canonical) itself: the last mount covering it binds
    /// it back writable. Stricter than the sandbox: a read-only or hidden mount counts even
    /// when its path does not exist yet (`bwrap` skips those), and the sandbox's own fresh
    /// folders (`/tmp` unless a mount binds a folder of it back) are not the host's. The host
    /// writes for an agent (ACP's `fs/write_text_file`) only where this holds.
    pub fn lets_write(&self, path: &Path) -> bool {
        let mut writable = false;
        for mount in &self.mounts {
            if path.starts_with(mount.path()) {
                writable = matches!(mount, Mount::Writable(_));
            }
        }
        writable
    }

    /// The `bwrap` arguments that run `program args` in `cwd`. Inside, the user and group ids
    /// stay the host's (`host_ids`), but root's become [`ROOT_HOST_SANDBOX_ID`].
    pub fn args(
        &self,
        program: &Path,
        args: &[OsString],
        cwd: &Path,
        host_ids: (u32, u32),
    ) -> Vec<OsString> {
        let mut out = Args::default();
        let (uid, gid) = match host_ids {
            (0, _) => (ROOT_HOST_SANDBOX_ID, ROOT_HOST_SANDBOX_ID),
            ids => ids,
        };
        out.push(&["--unshare-user", "--uid"]).text(&uid.to_string());
        out.push(&["--gid"]).text(&gid.to_string());
        out.push(&["--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]);
        out.push(&["--unshare-cgroup-try", "--unshare-net"]);
        out.push(&["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        for dir in FRESH_DIRS {
            out.push(&["--tmpfs"]).text(dir);
        }
        for mount in &self.mounts {
            let Ok(meta) = std::fs::metadata(mount.path()) else { continue };
            match mount {
                Mount::Hide(path) if meta.is_dir() => out.push(&["--tmpfs"]).path(path),
                Mount::Hide(path) => out.push(&["--ro-bind", "/dev/null"]).path(path),
                Mount::ReadOnly(path) => out.push(&["--ro-bind"]).path(path).path(path),
                Mount::Writable(path) => out.push(&["--bind"]).path(path).path(path),
            };
        }
        for (name, value) in &self.env {
            out.push(&["--setenv"]).text(name).text(value);
        }
        let copies: Vec<(String, &PathBuf)> = match self.network {
            Some(_) => self
                .copies
                .iter()
                .filter(|(source, _)| source.is_file())
                .enumerate()
                .map(|(i, (source, dest))| {
                    out.push(&["--ro-bind"])
                        .path(source)
                        .text(&format!("{SANDBOX_COPIES_DIR}/{i}"));
                    (format!("{SANDBOX_COPIES_DIR}/{i}"), dest)
                })
                .collect(),
            None => Vec::new(),
        };
        if let Some(network) = &self.network {
            out.push(&["--bind"]).path(&network.socket_dir).text(SANDBOX_EGRESS_DIR);
            let proxy = format!("http://127.0.0.1:{}", network.proxy_port);
            for name in ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"] {
                out.push(&["--setenv"]).text(name).text(&proxy);
            }
            // Loopback goes direct: inside, it is the sandbox's own, where the forwards listen.
            for name in ["NO_PROXY", "no_proxy"] {
                out.push(&["--setenv"]).text(name).text("localhost,127.0.0.1,::1");
            }
        }
        out.push(&["--new-session", "--chdir"]).path(cwd).push(&["--"]);
        if let Some(network) = &self.network {
            out.path(&network.program).push(&[CONFINE_ENTRY, "--proxy-port"]);
            out.text(&network.proxy_port.to_string());
            for forward in &network.forwards {
                out.push(&["--forward"]).text(forward);
            }
            for (inside, dest) in &copies {
                out.push(&["--copy"]).text(inside).path(dest);
            }
            out.push(&["--"]);
        }
        out.path(program);
        out.0.extend(args.iter().cloned());
        out.0
    }
}

/// An argument list under construction.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push(&mut self, items: &[&str]) -> &mut Args {
        self.0.extend(items.iter().map(OsString::from));
        self
    }
    fn text(&mut self, item: &str) -> &mut Args {
        self.0.push(item.into());
        self
    }
    fn path(&mut self, item: &Path) -> &mut Args {
        self.0.push(item.as_os_str().to_owned());
        self
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
    fn the_persons_sockets_are_named_by_their_variables() {
        assert!(is_person_socket_variable("SSH_AUTH_SOCK".as_ref()));
        assert!(is_person_socket_variable("DISPLAY".as_ref()));
        assert!(!is_person_socket_variable("PATH".as_ref()));
    }

    #[test]
    fn the_command_line_confines_then_binds_back_then_runs_the_bridge_and_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let (home, wt, git) =
            (dir.path().join("home"), dir.path().join("wt"), dir.path().join("cfg"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(&git, "").unwrap();
        let mut isolation = Isolation::new("/usr/bin/bwrap".into());
        isolation.mounts = vec![
            Mount::Hide(home),
            Mount::Hide(git.clone()),
            Mount::Hide(dir.path().join("absent")),
            Mount::Writable(wt.clone()),
            Mount::ReadOnly(git),
        ];
        isolation.network = Some(NetworkBridge {
            program: "/bin/nucleic".into(),
            socket_dir: "/data/egress/s1".into(),
            proxy_port: 3128,
            forwards: vec!["127.0.0.1:4000".into()],
            allowed: vec!["127.0.0.1:4000".into()],
        });
        let args = isolation.args(Path::new("/bin/claude"), &["-p".into()], &wt, (0, 0));
        let joined = args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
        let d = dir.path().display();
        let expected_start = "--unshare-user --uid 1000 --gid 1000 --cap-drop ALL --unshare-pid \
            --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net \
            --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /var/tmp --tmpfs /dev/shm \
            --tmpfs /run";
        assert!(joined.starts_with(expected_start), "{joined}");
        assert!(
            joined.contains(&format!(
                "--tmpfs {d}/home --ro-bind /dev/null {d}/cfg --bind {d}/wt {d}/wt \
                 --ro-bind {d}/cfg {d}/cfg --bind /data/egress/s1 /run/nucleic-egress"
            )),
            "{joined}"
        );
        assert!(!joined.contains("absent"), "{joined}");
        assert!(joined.contains("--setenv HTTPS_PROXY http://127.0.0.1:3128"), "{joined}");
        assert!(
            joined.ends_with(&format!(
                "--new-session --chdir {d}/wt -- /bin/nucleic __confine --proxy-port 3128 \
                 --forward 127.0.0.1:4000 -- /bin/claude -p"
            )),
            "{joined}"
        );
    }

    #[test]
    fn a_person_keeps_their_own_ids_inside() {
        let isolation = Isolation::new("/usr/bin/bwrap".into());
        let args = isolation.args(Path::new("/bin/true"), &[], Path::new("/"), (1234, 100));
        let joined = args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
        assert!(joined.starts_with("--unshare-user --uid 1234 --gid 100 "), "{joined}");
        assert!(joined.ends_with("--chdir / -- /bin/true"), "{joined}");
    }
}
