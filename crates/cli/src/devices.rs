//! `nucleic device list|revoke` and `nucleic token rotate`: the devices signed in to the daemon,
//! and the one command that signs every one of them out.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;
use nucleic_client::results::{Pairing, TokenRotated, decode_result};
use nucleic_protocol::{ClientMessage, DeviceSummary, HostMessage, Intent, IntentResult};

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
    let mut daemon = crate::daemon::connect(home).await?;
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
                other => bail!("unexpected reply: {}", nucleic_client::describe(&other)),
            }
        }
        DeviceCommand::Revoke { device_id } => {
            daemon.intent(Intent::RevokeDevice { device_id: device_id.clone() }).await?;
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
    let mut daemon = crate::daemon::connect(home).await?;
    let result = daemon.intent(Intent::PairDevice { name, ttl_secs }).await?;
    let printed = result.as_ref().map(IntentResult::payload).unwrap_or_default();
    let pairing: Pairing = decode_result("intent pairDevice", result)?;
    let link = pairing.link.as_str();
    if json {
        let mut v = printed;
        if let Some(o) = v.as_object_mut() {
            o.shift_remove("qrSvg");
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
    let mut daemon = crate::daemon::connect(home).await?;
    match command {
        TokenCommand::Rotate => {
            let rotated: TokenRotated = daemon.intent_as(Intent::RotateToken).await?;
            println!(
                "new token written to {}; {} device(s) signed out",
                home.join(nucleic_server::TOKEN_FILE).display(),
                rotated.devices_revoked
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
