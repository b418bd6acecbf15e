//! Who in the sandbox opened a connection to the bridge: the agent program itself (its own
//! background traffic — update checks, telemetry, plugin lists) or a command it ran. Read from
//! the sandbox's own `/proc` (its network and process namespaces): the connection's socket in
//! `/proc/net/tcp`, the process holding it, and that process's place under the agent.
//!
//! A wrong answer can only refuse more, never allow more: a connection said to be the agent's
//! own is refused without asking when its name is off the allow-list, and one said to be a
//! command's is asked. So whatever cannot be seen — a process that hid its descriptors
//! (`PR_SET_DUMPABLE` 0, as Codex's binary does), one gone already — counts as the agent's own.

use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

/// Where a connection came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The agent program: its process, or a child of it running under the program's own name
    /// (Codex's native `codex` under its Node launcher) — or a process that could not be seen.
    Agent,
    /// A command the agent ran: any other process in the sandbox.
    Command,
}

/// The agent program's process, as the bridge knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentProcess {
    pub pid: u32,
    /// The program's file name (`codex`), which a launcher's child running it also has.
    pub name: String,
}

/// Where the connection from `peer` to the bridge's `local` address came from (in the
/// namespace of `proc`, normally `/proc`).
pub fn origin_of(proc: &Path, peer: SocketAddr, local: SocketAddr, agent: &AgentProcess) -> Origin {
    let Some(inode) = socket_inode(proc, peer, local) else { return Origin::Agent };
    // A socket shared by several processes is a command's when any of them is one.
    match holders_of(proc, inode).iter().any(|&pid| is_command(proc, pid, agent)) {
        true => Origin::Command,
        false => Origin::Agent,
    }
}

/// The inode of the socket whose local address is `peer` and remote address `local` (the
/// client's end of the connection), from `/proc/net/tcp`.
fn socket_inode(proc: &Path, peer: SocketAddr, local: SocketAddr) -> Option<u64> {
    let (IpAddr::V4(_), IpAddr::V4(_)) = (peer.ip(), local.ip()) else { return None };
    let table = fs::read_to_string(proc.join("net/tcp")).ok()?;
    let (ours, theirs) = (proc_address(peer), proc_address(local));
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, from, to, _, _, _, _, _, _, inode, ..] if *from == ours && *to == theirs => {
                inode.parse().ok().filter(|&i| i != 0)
            }
            _ => None,
        }
    })
}

/// An IPv4 address as `/proc/net/tcp` prints it: the address's 32 bits as the kernel holds
/// them (network order, read natively), then the port, both in upper-case hex.
fn proc_address(at: SocketAddr) -> String {
    let ip = match at.ip() {
        IpAddr::V4(v4) => u32::from_ne_bytes(v4.octets()),
        IpAddr::V6(_) => 0,
    };
    format!("{ip:08X}:{:04X}", at.port())
}

/// The processes holding socket `inode` among those whose descriptors can be read.
fn holders_of(proc: &Path, inode: u64) -> Vec<u32> {
    let wanted = format!("socket:[{inode}]");
    let Ok(entries) = fs::read_dir(proc) else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(fds) = fs::read_dir(proc.join(pid.to_string()).join("fd")) else {
                return false;
            };
            fds.filter_map(Result::ok)
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|target| target == Path::new(&wanted)))
        })
        .collect()
}

/// Whether process `pid` is a command: neither the agent nor its child under the program's
/// own name. A process whose place cannot be read is not said to be a command. (A shell's last
/// command replaces the shell — `bash -c curl` is `curl`, the agent's child — so nothing is
/// told by a process's depth or by whether a shell started it.)
fn is_command(proc: &Path, pid: u32, agent: &AgentProcess) -> bool {
    if pid == agent.pid {
        return false;
    }
    let Some((name, parent)) = name_and_parent(proc, pid) else { return false };
    !(parent == agent.pid && is_named(&name, &agent.name))
}

/// Whether a process the kernel calls `comm` runs the program `name` (the kernel keeps only a
/// name's first 15 bytes).
fn is_named(comm: &str, name: &str) -> bool {
    !comm.is_empty() && (comm == name || (comm.len() == 15 && name.starts_with(comm)))
}

/// A process's name and parent, from `/proc/PID/stat` (readable even for a process that hid
/// its descriptors). The name is in parentheses and may hold anything, so it ends at the last
/// `)`.
fn name_and_parent(proc: &Path, pid: u32) -> Option<(String, u32)> {
    let stat = fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let name = stat.get(open + 1..close)?.to_owned();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    Some((name, rest.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    const PROC: &str = "/proc";

    /// This test process as the agent program `name`.
    fn me(name: &str) -> AgentProcess {
        AgentProcess { pid: std::process::id(), name: name.to_owned() }
    }

    /// A bridge-like listener and the origin of its next connection.
    fn origin_of_next(listener: &TcpListener, agent: &AgentProcess) -> Origin {
        let (conn, peer) = listener.accept().unwrap();
        origin_of(Path::new(PROC), peer, conn.local_addr().unwrap(), agent)
    }

    /// A process killed and reaped when dropped.
    struct Running(Child);

    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// Runs `script` under bash (which connects and waits).
    fn bash(script: &str) -> Running {
        Running(Command::new("bash").args(["-c", script]).stdin(Stdio::null()).spawn().unwrap())
    }

    #[test]
    fn addresses_are_written_as_proc_net_tcp_writes_them() {
        assert_eq!(proc_address("127.0.0.1:8080".parse().unwrap()), "0100007F:1F90");
    }

    #[test]
    fn the_agent_itself_is_the_agent() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert_eq!(origin_of_next(&listener, &me("agent")), Origin::Agent);
    }

    #[test]
    fn a_shell_the_agent_started_is_a_command_and_so_is_what_it_runs() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shell = bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 5; true"));
        assert_eq!(origin_of_next(&listener, &me("agent")), Origin::Command);
        drop(shell);
        // The shell's last command replaces it: `sleep`, the agent's child, holds the socket.
        let last = bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 5"));
        assert_eq!(origin_of_next(&listener, &me("agent")), Origin::Command);
        drop(last);
        // Two levels down.
        let deeper = bash(&format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 5'; true"));
        assert_eq!(origin_of_next(&listener, &me("agent")), Origin::Command);
        drop(deeper);
    }

    #[test]
    fn the_agents_child_under_the_programs_own_name_is_the_agent() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 5");
        let launched = bash(&script);
        assert_eq!(origin_of_next(&listener, &me("sleep")), Origin::Agent);
        drop(launched);
        // The same name deeper down is a command's.
        let deeper = bash(&format!("bash -c '{script}'; true"));
        assert_eq!(origin_of_next(&listener, &me("sleep")), Origin::Command);
        drop(deeper);
    }

    #[test]
    fn a_connection_nobody_holds_any_more_is_the_agents() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut gone = bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port}"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while gone.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the shell did not exit within 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        let (mut conn, peer) = listener.accept().unwrap();
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
        let agent = AgentProcess { pid: 1, name: "agent".into() };
        assert_eq!(
            origin_of(Path::new(PROC), peer, conn.local_addr().unwrap(), &agent),
            Origin::Agent
        );
    }

    #[test]
    fn a_name_with_spaces_and_parentheses_is_read_to_its_last_parenthesis() {
        let dir = tempfile::tempdir().unwrap();
        let pid_dir = dir.path().join("42");
        fs::create_dir(&pid_dir).unwrap();
        fs::write(pid_dir.join("stat"), "42 (a (b) c) S 7 42 42 0").unwrap();
        assert_eq!(name_and_parent(dir.path(), 42), Some(("a (b) c".to_owned(), 7)));
        let agent = AgentProcess { pid: 7, name: "codex".into() };
        assert!(is_command(dir.path(), 42, &agent), "another program the agent started");
        fs::write(pid_dir.join("stat"), "42 (codex) S 7 42").unwrap();
        assert!(!is_command(dir.path(), 42, &agent), "the program under its launcher");
        assert!(!is_command(dir.path(), 99, &agent), "a process that cannot be read");
    }

    #[test]
    fn the_kernel_keeps_fifteen_bytes_of_a_name() {
        assert!(is_named("a-very-long-nam", "a-very-long-name-indeed"));
        assert!(!is_named("a-very-long", "a-very-long-name"));
        assert!(!is_named("", ""));
    }
}
