//! The first process inside an agent's sandbox (`nucleic __confine`): it opens the network
//! bridge on the sandbox's loopback (the HTTP proxy port and each forwarded model endpoint,
//! all relayed to the host's egress proxy, which hears whether the agent itself or one of its
//! commands opened a connection), then runs the agent and exits with its status.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, OnceLock};

use crate::isolation::{CONFINE_ENTRY, EGRESS_SOCKET_NAME, SANDBOX_EGRESS_DIR};

/// What `__confine` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfineArgs {
    pub proxy_port: u16,
    /// `127.0.0.1:PORT` endpoints listened on inside and reached through the proxy.
    pub forwards: Vec<String>,
    /// Files copied before the agent starts (`(source, destination)`).
    pub copies: Vec<(PathBuf, PathBuf)>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// Runs `__confine` when it is this process's first argument (before any other parsing, so
/// an agent's start pays nothing else); `None` otherwise.
pub fn run_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(CONFINE_ENTRY.as_ref()) {
        return None;
    }
    Some(match parse(args.collect()) {
        Ok(asked) => run(&asked),
        Err(e) => {
            eprintln!("nucleic {CONFINE_ENTRY}: {e}");
            ExitCode::from(125)
        }
    })
}

/// Parses `--proxy-port N [--forward HOST:PORT]… [--copy SOURCE DEST]… -- PROGRAM ARGS…`.
pub fn parse(args: Vec<OsString>) -> Result<ConfineArgs, String> {
    let mut proxy_port = None;
    let mut forwards = Vec::new();
    let mut copies = Vec::new();
    let mut rest = args.into_iter();
    loop {
        let Some(flag) = rest.next() else { return Err("no program after --".into()) };
        let mut value = || {
            rest.next()
                .and_then(|v| v.into_string().ok())
                .ok_or_else(|| format!("{} needs a value", flag.to_string_lossy()))
        };
        match flag.to_str() {
            Some("--proxy-port") => {
                let text = value()?;
                proxy_port = Some(text.parse().map_err(|_| format!("bad --proxy-port {text}"))?);
            }
            Some("--forward") => forwards.push(value()?),
            Some("--copy") => {
                let source = PathBuf::from(value()?);
                copies.push((source, PathBuf::from(value()?)));
            }
            Some("--") => break,
            _ => return Err(format!("unknown argument {}", flag.to_string_lossy())),
        }
    }
    let program = rest.next().ok_or("no program after --")?;
    Ok(ConfineArgs {
        proxy_port: proxy_port.ok_or("--proxy-port is required")?,
        forwards,
        copies,
        program,
        args: rest.collect(),
    })
}

/// Opens the bridge, then runs the agent to its end: its exit code is this process's (a death
/// by signal N reads as 128 + N, as a shell would say).
pub fn run(asked: &ConfineArgs) -> ExitCode {
    let socket = PathBuf::from(SANDBOX_EGRESS_DIR).join(EGRESS_SOCKET_NAME);
    let listeners = match open_listeners(asked) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("nucleic {CONFINE_ENTRY}: cannot open the network bridge: {e}");
            return ExitCode::from(125);
        }
    };
    let (proxy, forwards) = listeners;
    for (source, dest) in &asked.copies {
        let made = dest.parent().map_or(Ok(()), std::fs::create_dir_all);
        if let Err(e) = made.and_then(|()| std::fs::copy(source, dest).map(drop)) {
            eprintln!("nucleic {CONFINE_ENTRY}: cannot give the agent {}: {e}", dest.display());
        }
    }
    // The agent's process, once started: the bridge tells its own traffic from its commands'.
    let agent = Arc::new(OnceLock::new());
    let bridged = agent.clone();
    std::thread::spawn(move || {
        // It returns only when a listener broke: the agent's network is gone, said once.
        let Err(e) = nucleic_egress::bridge(&socket, proxy, forwards, bridged);
        eprintln!("nucleic {CONFINE_ENTRY}: the network bridge stopped: {e}");
    });
    let status = match Command::new(&asked.program).args(&asked.args).spawn() {
        Ok(mut child) => {
            let name = Path::new(&asked.program).file_name().unwrap_or_default();
            let name = name.to_string_lossy().into_owned();
            let _ = agent.set(nucleic_egress::AgentProcess { pid: child.id(), name });
            match child.wait() {
                Ok(status) => status,
                Err(e) => {
                    eprintln!("nucleic {CONFINE_ENTRY}: cannot wait for the agent: {e}");
                    return ExitCode::from(125);
                }
            }
        }
        Err(e) => {
            eprintln!(
                "nucleic {CONFINE_ENTRY}: cannot run {}: {e}",
                asked.program.to_string_lossy()
            );
            return ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            });
        }
    };
    let code = status
        .code()
        .or_else(|| std::os::unix::process::ExitStatusExt::signal(&status).map(|s| 128 + s));
    ExitCode::from(code.and_then(|c| u8::try_from(c).ok()).unwrap_or(1))
}

type Listeners = (std::net::TcpListener, Vec<(std::net::TcpListener, String)>);

fn open_listeners(asked: &ConfineArgs) -> std::io::Result<Listeners> {
    let proxy = nucleic_egress::bind_loopback(asked.proxy_port)?;
    let mut forwards = Vec::new();
    for target in &asked.forwards {
        let port = target
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse::<u16>().ok())
            .ok_or_else(|| std::io::Error::other(format!("bad forward {target}")))?;
        forwards.push((nucleic_egress::bind_loopback(port)?, target.clone()));
    }
    Ok((proxy, forwards))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_arguments_name_the_ports_then_the_program() {
        let asked =
            parse(os(&["--proxy-port", "3128", "--forward", "127.0.0.1:9", "--", "claude", "-p"]))
                .unwrap();
        assert_eq!(asked.proxy_port, 3128);
        assert_eq!(asked.forwards, vec!["127.0.0.1:9".to_owned()]);
        assert_eq!(asked.program, OsString::from("claude"));
        assert_eq!(asked.args, os(&["-p"]));
    }

    #[test]
    fn bad_arguments_are_refused_saying_why() {
        assert!(parse(os(&["--proxy-port", "x", "--", "a"])).unwrap_err().contains("bad"));
        assert!(parse(os(&["--", "a"])).unwrap_err().contains("required"));
        assert!(parse(os(&["--proxy-port", "1"])).unwrap_err().contains("no program"));
        assert!(parse(os(&["--what"])).unwrap_err().contains("unknown"));
    }
}
