//! `nucleic device list|revoke` and `nucleic token rotate`: the devices signed in to the daemon,
//! and the one command that signs every one of them out.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;
use nucleic_protocol::{ClientMessage, DeviceSummary, HostMessage, Intent};

use crate::commands::intent;
use crate::daemon::Daemon;

#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// Every device that signed in (browsers; later phones), revoked ones included.
    List,
    /// Sign a device out for good: its open connections close at once.
    Revoke { device_id: String },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// A new host token (written to `$NUCLEIC_HOME/token`): every device is signed out and
    /// every open connection closed.
    Rotate,
}

fn when(millis: Option<i64>) -> String {
    millis
        .and_then(|ms| {
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
        })
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| "-".into())
}

fn print_device(d: &DeviceSummary) {
    let state = match d.revoked_at {
        Some(at) => format!("revoked {}", when(Some(at))),
        None => format!("last seen {}", when(d.last_seen_at)),
    };
    println!("{}  {:<24}  signed in {}  {state}", d.device_id, d.name, when(Some(d.paired_at)));
}

pub async fn device(home: &Path, command: DeviceCommand) -> anyhow::Result<ExitCode> {
    let mut daemon = Daemon::connect(home).await?;
    match command {
        DeviceCommand::List => {
            let message_id = daemon.id();
            match daemon.request(ClientMessage::ListDevices { message_id }).await? {
                HostMessage::Devices { devices, .. } => {
                    if devices.is_empty() {
                        println!("no devices (`nucleic open` signs a browser in)");
                    }
                    devices.iter().for_each(print_device);
                }
                other => bail!("unexpected reply: {}", crate::daemon::describe(&other)),
            }
        }
        DeviceCommand::Revoke { device_id } => {
            intent(&mut daemon, Intent::RevokeDevice { device_id: device_id.clone() }).await?;
            println!("revoked {device_id}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `nucleic pair`: opens a pairing at the daemon and shows its link as a QR code.
pub async fn pair(
    home: &Path,
    name: Option<String>,
    ttl_secs: Option<u32>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut daemon = Daemon::connect(home).await?;
    let result = intent(&mut daemon, Intent::PairDevice { name, ttl_secs }).await?;
    let Some(link) = result.as_ref().and_then(|v| v.get("link")).and_then(|l| l.as_str()) else {
        bail!("the daemon answered without a link");
    };
    if json {
        let mut v = result.clone().unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("qrSvg");
        }
        println!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(qr) = nucleic_server::remote::pairing::qr_terminal(link) {
        println!("{qr}");
    }
    println!("Scan the code, or open this link on the phone (once, within 10 minutes):\n{link}");
    println!(
        "Then `nucleic device list` shows it; `nucleic device revoke <id>` cuts it off at once."
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn token(home: &Path, command: TokenCommand) -> anyhow::Result<ExitCode> {
    let mut daemon = Daemon::connect(home).await?;
    match command {
        TokenCommand::Rotate => {
            let result = intent(&mut daemon, Intent::RotateToken).await?;
            let revoked =
                result.and_then(|v| v.get("devicesRevoked").and_then(serde_json::Value::as_u64));
            println!(
                "new token written to {}; {} device(s) signed out",
                home.join(nucleic_server::TOKEN_FILE).display(),
                revoked.unwrap_or(0)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
