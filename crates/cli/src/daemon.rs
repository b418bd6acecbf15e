//! The CLI's connection to its daemon: a `nucleic-client` client of the home's daemon, which
//! starts `nucleic serve` (this executable) when no host holds the home's lock.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use nucleic_client::{Client, ClientOptions, DaemonStarter, LocalDaemon, paired};

use crate::home_lock;

/// Starts `nucleic serve` detached; knows the home's lock.
#[derive(Debug)]
struct Serve;

impl DaemonStarter for Serve {
    fn holder(&self, home: &Path) -> Option<u32> {
        home_lock::holder(home)
    }

    fn start(&self, home: &Path, log: &Path) -> std::io::Result<std::process::Child> {
        let log_file =
            std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(log)?;
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        cmd.arg("serve")
            .arg("--home")
            .arg(home)
            .args(["--bind", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.spawn()
    }
}

/// The daemon of `home` for a front end that makes its own connections (`nucleic acp`),
/// started (detached) when no host runs there.
pub fn local_daemon(home: &Path) -> LocalDaemon {
    LocalDaemon::new(home).with_starter(Arc::new(Serve))
}

/// `--remote HOST`: the paired host (`nucleic remote pair`) this process's daemon commands go
/// to instead of the home's own daemon; set once, before any command runs.
static REMOTE: OnceLock<String> = OnceLock::new();

/// Sends this process's daemon commands to the paired host `host` (see [`REMOTE`]).
pub fn use_remote(host: String) {
    let _ = REMOTE.set(host);
}

/// The home's daemon (started, detached, if no host runs there), or with `--remote` the paired
/// host through its relay.
async fn reach(home: &Path, options: ClientOptions) -> anyhow::Result<Client> {
    if let Some(wanted) = REMOTE.get() {
        let host = paired::find(home, wanted)?;
        return warned(paired::connect(&host, options).await?);
    }
    let daemon = local_daemon(home);
    warned(Client::local(daemon, options).await?)
}

/// Connects to the daemon of `home` (or the `--remote` host).
pub async fn connect(home: &Path) -> anyhow::Result<Client> {
    // Random per process (`ClientOptions::new`): a reused pid must never be answered from
    // another's remembered replies. One event per message suits a terminal; batches are for browsers, so no features.
    reach(home, ClientOptions::new("cli", format!("terminal ({})", whoami()))).await
}

/// Connects as a front end of its own (`prefix` of its client id, `name` its label), with a
/// shorter reply deadline than a terminal's: a chat command waits a minute at most.
pub async fn connect_as(home: &Path, prefix: &str, name: &str) -> anyhow::Result<Client> {
    let mut options = ClientOptions::new(prefix, name);
    options.reply_within = std::time::Duration::from_secs(60);
    reach(home, options).await
}

/// Connects a front end the daemon of `home` runs itself (its chat bridge) to that daemon,
/// never starting another: a daemon that is not there is an error.
pub async fn connect_own(home: &Path, prefix: &str, name: &str) -> anyhow::Result<Client> {
    let mut options = ClientOptions::new(prefix, name);
    options.reply_within = std::time::Duration::from_secs(60);
    Ok(Client::local(LocalDaemon::new(home), options).await?)
}

/// The client, after a warning on stderr when the daemon was built from another revision (an
/// upgraded `nucleic` talking to the daemon an older one started): said once per command,
/// before anything fails to read, so the person knows to restart it.
fn warned(client: Client) -> anyhow::Result<Client> {
    if let Some(why) = client.welcome().other_build() {
        eprintln!("warning: {why}");
    }
    Ok(client)
}

/// [`connect_as`] for a client that follows sessions and wants every `sessionChanged` push,
/// with events in batches when they queue up (a catch-up of 100,000 events). A lost connection
/// is reported after 2 s of reconnecting (not 15: a screen says it is offline) and tried again
/// by the caller.
pub async fn connect_following(home: &Path, prefix: &str, name: &str) -> anyhow::Result<Client> {
    let mut options = ClientOptions::new(prefix, name);
    options.reply_within = std::time::Duration::from_secs(60);
    options.session_changes = true;
    options.features = vec![nucleic_protocol::FEATURE_EVENT_BATCHES.to_owned()];
    options.reconnect = nucleic_client::Backoff {
        first: std::time::Duration::from_millis(50),
        max: std::time::Duration::from_millis(500),
        within: std::time::Duration::from_secs(2),
    };
    reach(home, options).await
}

/// Connects as an MCP grant (its `credential`, never the home's token), starting the daemon if
/// none runs.
pub async fn connect_with_credential(home: &Path, credential: &str) -> anyhow::Result<Client> {
    let mut options = ClientOptions::new("mcp", "MCP server");
    options.reply_within = std::time::Duration::from_secs(60);
    let daemon = LocalDaemon::new(home).with_starter(Arc::new(Serve)).with_credential(credential);
    warned(Client::local(daemon, options).await?)
}

fn whoami() -> String {
    std::env::var("USER").unwrap_or_else(|_| "user".into())
}
