//! `nucleic service install|uninstall|status`: the daemon as a systemd user service — a unit
//! that runs `nucleic serve`, restarts it when it stops on its own (a crash, or SIGHUP's hand-over
//! on upgrade: the agents stay with their keepers and the new daemon re-adopts them), logs to the
//! journal, and is started at login. Where there is no systemd user manager, it says so and
//! what to do instead.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Subcommand;

/// The unit's name.
pub const UNIT: &str = "nucleic.service";

/// How long one `systemctl` call may take.
const SYSTEMCTL_DEADLINE: Duration = Duration::from_secs(30);

/// The first line of a unit this command wrote; the second holds a checksum of the rest, so a
/// unit edited by hand is told from ours.
const WRITTEN_BY: &str =
    "# Written by `nucleic service install`; edit it and the next install asks for --force.";
const CHECKSUM: &str = "# nucleic-unit-checksum: ";

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the systemd user unit for `nucleic serve`, enable it and start it now.
    ///
    /// Example: `nucleic service install`, then `journalctl --user -u nucleic -f` for its log.
    /// Upgrading: replace the binary, then `systemctl --user reload nucleic` (SIGHUP: the daemon
    /// hands its agents to their keepers and exits; systemd starts the new one, which re-adopts
    /// them).
    Install {
        /// Replace a unit that was edited by hand.
        #[arg(long)]
        force: bool,
        /// Write and enable the unit, but do not start it now.
        #[arg(long)]
        no_start: bool,
    },
    /// Stop and disable the service and remove its unit (the data dir is kept).
    Uninstall {
        /// Remove the unit even if it was edited by hand.
        #[arg(long)]
        force: bool,
    },
    /// Whether the unit is installed (and as written, or edited), enabled and running.
    Status,
}

/// Runs `nucleic service …` for the data dir `home`.
pub fn run(command: ServiceCommand, home: &Path) -> anyhow::Result<()> {
    let path = unit_path()?;
    match command {
        ServiceCommand::Install { force, no_start } => install(&path, home, force, no_start),
        ServiceCommand::Uninstall { force } => uninstall(&path, force),
        ServiceCommand::Status => status(&path),
    }
}

/// Where user units live: `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
pub fn unit_path() -> anyhow::Result<PathBuf> {
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".config"),
    };
    Ok(config.join("systemd/user").join(UNIT))
}

/// The unit for `program serve` with data in `home`, checksum included.
pub fn unit_text(program: &Path, home: &Path) -> String {
    let body = format!(
        "[Unit]\n\
         Description=Nucleic: coding agents in parallel (the daemon)\n\
         After=network.target\n\
         \n\
         [Service]\n\
         Type=simple\n\
         ExecStart={program} serve\n\
         Environment={home}\n\
         # SIGHUP hands over (agents keep running under their keepers); systemd starts the new\n\
         # daemon, which re-adopts them.\n\
         ExecReload=/bin/kill -HUP $MAINPID\n\
         Restart=always\n\
         RestartSec=2\n\
         # Only the daemon is signalled on stop (it stops its agents itself); its keepers must\n\
         # outlive a hand-over.\n\
         KillMode=process\n\
         TimeoutStopSec=60\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        program = quote(program),
        home = quote(Path::new(&format!("NUCLEIC_HOME={}", home.display()))),
    );
    format!("{WRITTEN_BY}\n{CHECKSUM}{:016x}\n{body}", checksum(&body))
}

/// A path (or assignment) as one word of a unit file (quoted when it holds a space or a quote).
fn quote(path: &Path) -> String {
    let text = path.display().to_string();
    if text.contains([' ', '"', '\\', '\t']) {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text
    }
}

/// FNV-1a, 64 bits: enough to tell an edited unit from ours (not a secret).
fn checksum(text: &str) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// What is at the unit's path.
#[derive(Debug, PartialEq, Eq)]
pub enum Installed {
    Absent,
    /// Ours, as written (possibly by another version or for another binary).
    Ours(String),
    /// Not ours, or ours edited since.
    Edited,
}

pub fn installed(path: &Path) -> anyhow::Result<Installed> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Installed::Absent),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut lines = text.splitn(3, '\n');
    let (first, second, body) = (lines.next(), lines.next(), lines.next().unwrap_or(""));
    let sum = second.and_then(|l| l.strip_prefix(CHECKSUM));
    Ok(match (first, sum) {
        (Some(WRITTEN_BY), Some(sum)) if sum == format!("{:016x}", checksum(body)) => {
            Installed::Ours(text)
        }
        _ => Installed::Edited,
    })
}

fn install(path: &Path, home: &Path, force: bool, no_start: bool) -> anyhow::Result<()> {
    let program = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot tell where this nucleic binary is")?;
    let text = unit_text(&program, home);
    match installed(path)? {
        Installed::Ours(old) if old == text => {
            println!("{} is installed, unchanged", path.display())
        }
        Installed::Edited if !force => bail!(
            "{} was edited by hand (or is not ours): not replaced; run `nucleic service install \
             --force` to replace it",
            path.display()
        ),
        _ => {
            let dir = path.parent().context("the unit path has no directory")?;
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let temporary = path.with_extension("service.new");
            std::fs::write(&temporary, &text)
                .and_then(|()| std::fs::rename(&temporary, path))
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!(
                "wrote {} (runs {} serve, data in {})",
                path.display(),
                program.display(),
                home.display()
            );
        }
    }
    user_manager().map_err(|why| no_manager(path, &why))?;
    systemctl(&["daemon-reload"])?;
    let enable: &[&str] = if no_start { &["enable", UNIT] } else { &["enable", "--now", UNIT] };
    systemctl(enable)?;
    println!(
        "enabled{}: starts at login, restarts when it stops on its own; log: journalctl --user -u nucleic",
        if no_start { "" } else { " and started" }
    );
    println!("to keep it running after you log out: loginctl enable-linger $USER");
    Ok(())
}

fn uninstall(path: &Path, force: bool) -> anyhow::Result<()> {
    match installed(path)? {
        Installed::Absent => {
            println!("{} is not installed: nothing to do", path.display());
            return Ok(());
        }
        Installed::Edited if !force => bail!(
            "{} was edited by hand (or is not ours): not removed; `nucleic service uninstall \
             --force` removes it",
            path.display()
        ),
        Installed::Edited | Installed::Ours(_) => {}
    }
    match user_manager() {
        Ok(()) => systemctl(&["disable", "--now", UNIT])?,
        Err(why) => println!("no systemd user manager ({why}): nothing to stop"),
    }
    std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    if user_manager().is_ok() {
        systemctl(&["daemon-reload"])?;
    }
    println!("removed {} (the data dir is kept)", path.display());
    Ok(())
}

fn status(path: &Path) -> anyhow::Result<()> {
    println!("{}", status_line(path)?);
    Ok(())
}

/// One line on the service, for `service status` and `doctor`.
pub fn status_line(path: &Path) -> anyhow::Result<String> {
    let unit = match installed(path)? {
        Installed::Absent => {
            return Ok(format!(
                "service not installed (`nucleic service install` writes {})",
                path.display()
            ));
        }
        Installed::Ours(_) => format!("service unit {}", path.display()),
        Installed::Edited => format!("service unit {} (edited by hand)", path.display()),
    };
    Ok(match user_manager() {
        Err(why) => format!("{unit}; no systemd user manager ({why}): it does not run"),
        Ok(()) => {
            let enabled = systemctl_word("is-enabled");
            let active = systemctl_word("is-active");
            format!("{unit}; {enabled}, {active}")
        }
    })
}

/// Whether a systemd user manager answers; why not otherwise.
fn user_manager() -> Result<(), String> {
    match run_within(&["--user", "show-environment"]) {
        Ok((true, _)) => Ok(()),
        Ok((false, said)) => {
            Err(said.trim().lines().next().unwrap_or("systemctl --user failed").to_owned())
        }
        Err(e) => Err(e),
    }
}

fn no_manager(path: &Path, why: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "no systemd user manager here ({why}). The unit is written at {} for when there is one \
         (`systemctl --user enable --now nucleic`). Without systemd, run `nucleic serve` under \
         what keeps your programs running (a login script, tmux, your init system): it re-adopts \
         agents left running by the last one",
        path.display()
    )
}

fn systemctl(args: &[&str]) -> anyhow::Result<()> {
    let mut all = vec!["--user"];
    all.extend_from_slice(args);
    match run_within(&all) {
        Ok((true, _)) => Ok(()),
        Ok((false, said)) => bail!("systemctl {} failed: {}", all.join(" "), said.trim()),
        Err(e) => bail!("systemctl {}: {e}", all.join(" ")),
    }
}

/// `systemctl --user WORD nucleic.service`'s one-word answer (`enabled`, `active`, …).
fn systemctl_word(word: &str) -> String {
    match run_within(&["--user", word, UNIT]) {
        Ok((_, said)) => said.split_whitespace().next().unwrap_or("unknown").to_owned(),
        Err(e) => format!("unknown ({e})"),
    }
}

/// Runs `systemctl ARGS` within [`SYSTEMCTL_DEADLINE`]: whether it succeeded, and what it said
/// (stdout, then stderr).
fn run_within(args: &[&str]) -> Result<(bool, String), String> {
    let mut child = Command::new("systemctl")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run systemctl: {e}"))?;
    let until = Instant::now() + SYSTEMCTL_DEADLINE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s", SYSTEMCTL_DEADLINE.as_secs()));
            }
            Err(e) => return Err(format!("cannot wait for systemctl: {e}")),
        }
    };
    let mut said = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut said);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut said);
    }
    Ok((status.success(), said))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_we_wrote_is_ours_and_any_edit_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(UNIT);
        assert_eq!(installed(&path).unwrap(), Installed::Absent);
        let text = unit_text(Path::new("/opt/nucleic"), Path::new("/var/lib/my data"));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(installed(&path).unwrap(), Installed::Ours(text.clone()));
        assert!(text.contains("ExecStart=/opt/nucleic serve\n"), "{text}");
        assert!(text.contains("Environment=\"NUCLEIC_HOME=/var/lib/my data\"\n"), "{text}");
        std::fs::write(&path, text.replace("RestartSec=2", "RestartSec=9")).unwrap();
        assert_eq!(installed(&path).unwrap(), Installed::Edited);
        std::fs::write(&path, "[Service]\nExecStart=/bin/true\n").unwrap();
        assert_eq!(installed(&path).unwrap(), Installed::Edited);
    }
}
