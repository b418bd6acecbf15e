//! `nucleic remote pair|list|forget`: this machine as a paired device of a host elsewhere —
//! the pairing link `nucleic pair` printed there, spent once; the hosts kept 0600 under this
//! home (`nucleic_client::paired`). `--remote HOST` then sends any daemon command (sessions,
//! projects, `tui`) through the relay inside the host's Noise channel instead of to this
//! machine's daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use nucleic_client::ClientOptions;
use nucleic_client::paired::{self, PairingLink};

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Pair with a host through its relay, by the one-time link its `nucleic pair` printed
    /// (quote it: it has `&`s). This machine gets a key of its own for that host.
    Pair {
        link: String,
        /// A PEM file of CA certificates trusted for the host's wss:// relay besides the public
        /// Web PKI (a self-hosted relay with its own CA).
        #[arg(long)]
        relay_ca: Option<PathBuf>,
    },
    /// The hosts this machine is paired with.
    List,
    /// Forget a paired host (its key on this machine). Revoke the device on the host too.
    Forget { host: String },
}

pub async fn remote(home: &Path, command: RemoteCommand) -> anyhow::Result<ExitCode> {
    match command {
        RemoteCommand::Pair { link, relay_ca } => {
            let link = PairingLink::parse(&link)?;
            let options = ClientOptions::new("remote", "terminal (paired)");
            let (host, client) = paired::pair(home, &link, relay_ca, options).await?;
            client.close().await;
            let short = host.host.host_id.get(..12).unwrap_or_default();
            println!("paired with {} as {:?}", host.label(), host.name);
            println!("try: nucleic --remote {short} session list");
        }
        RemoteCommand::List => {
            let hosts = paired::list(home)?;
            if hosts.is_empty() {
                println!("no paired host (`nucleic remote pair LINK`)");
            }
            for h in hosts {
                println!("{}  as {:?}  through {}", h.label(), h.name, h.host.relay);
            }
        }
        RemoteCommand::Forget { host } => {
            let h = paired::find(home, &host)?;
            paired::forget(home, &h)?;
            println!(
                "forgot {} (revoke this device on the host too: `nucleic device revoke`)",
                h.label()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
