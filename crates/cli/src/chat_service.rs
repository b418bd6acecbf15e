//! The chat bridge inside the daemon: `nucleic chat enable` keeps the account (`chat/bridge.json`)
//! and its token (`chat/token`, 0600) in the data dir, and `nucleic serve` runs the bridge while
//! they are there — a client of itself through the sync protocol like any other — restarting it
//! when they change and stopping it when `nucleic chat disable` removes them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nucleic_chat::bridge::{self, BridgeError};
use nucleic_protocol::Backend;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, watch};

use crate::chat::{Account, OpenFailure, bridge_config, open_account, status_file};

/// How often the daemon looks at `chat/bridge.json`.
const LOOK_EVERY: Duration = Duration::from_secs(1);
/// The first wait before starting again a bridge that could not start; doubled up to
/// [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(2);
const RETRY_MAX: Duration = Duration::from_secs(60);
/// How long a stopping bridge may take (its last report to the host included).
const STOP_WITHIN: Duration = Duration::from_secs(10);
/// How long `enable` / `disable` wait for the daemon's bridge to say what it did.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// The bridge the daemon runs, as `nucleic chat enable` wrote it (the token apart).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BridgeSetup {
    /// `Some(homeserver)`: a Matrix account; `None`: a Telegram bot.
    pub matrix: Option<String>,
    /// The Bot API's base URL.
    pub api: String,
    /// The agent new sessions run (the project's default when `None`).
    pub agent: Option<Backend>,
    /// Seconds one long poll waits.
    pub poll_secs: u64,
    /// When it was enabled (unix ms): each `enable` is a new setup, restarted.
    pub enabled_at: i64,
}

fn setup_file(home: &Path) -> PathBuf {
    home.join("chat").join("bridge.json")
}

fn token_file(home: &Path) -> PathBuf {
    home.join("chat").join("token")
}

/// Writes `bytes` at `path` through a private temporary file renamed over it (0600 from the
/// start: the token is never readable by others, even for a moment).
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().context("a data dir file has a folder")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let temporary = path.with_extension("new");
    let _ = std::fs::remove_file(&temporary);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .with_context(|| format!("cannot create {}", temporary.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// What the daemon should run: the setup and its account, or `None` when the bridge is off.
/// A setup that cannot be read is an error (said, not guessed at).
fn wanted(home: &Path) -> anyhow::Result<Option<(BridgeSetup, Account)>> {
    let text = match std::fs::read_to_string(setup_file(home)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).context("cannot read chat/bridge.json"),
    };
    let setup: BridgeSetup = serde_json::from_str(&text).context("chat/bridge.json is damaged")?;
    let token = std::fs::read_to_string(token_file(home))
        .context("chat/token is missing: run `nucleic chat enable` again")?;
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!("chat/token is empty: run `nucleic chat enable` again");
    }
    let account = Account { matrix: setup.matrix.clone(), api: setup.api.clone(), token };
    Ok(Some((setup, account)))
}

/// `nucleic chat enable`: keeps the account for the daemon, makes sure a daemon runs, and waits
/// for its bridge to say whether it polls.
pub async fn enable(home: &Path, setup: BridgeSetup, token: &str) -> anyhow::Result<ExitCode> {
    write_private(&token_file(home), format!("{token}\n").as_bytes())?;
    let text = serde_json::to_string_pretty(&setup).context("the setup as JSON")?;
    write_private(&setup_file(home), format!("{text}\n").as_bytes())?;
    let daemon = crate::daemon::connect(home).await?;
    println!(
        "the daemon runs the bridge from now on, and at every start (token kept 0600 in {})",
        token_file(home).display()
    );
    drop(daemon);
    match answer(home, setup.enabled_at, |state| state != "stopped").await {
        Some((state, _)) if state == "running" => {
            println!("chat bridge running: pair a chat account with `nucleic chat pair`");
            Ok(ExitCode::SUCCESS)
        }
        Some((state, reason)) => {
            eprintln!("chat bridge {state}: {}", reason.unwrap_or_default());
            Ok(ExitCode::from(2))
        }
        None => bail!(
            "the daemon's bridge said nothing within {} s (an older daemon? restart it: `nucleic serve`)",
            ANSWER_WITHIN.as_secs()
        ),
    }
}

/// `nucleic chat disable`: removes the account and its token; the daemon stops its bridge
/// within a second or two.
pub async fn disable(home: &Path) -> anyhow::Result<ExitCode> {
    let existed = setup_file(home).exists();
    for path in [setup_file(home), token_file(home)] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", path.display())),
        }
    }
    if !existed {
        println!("the daemon runs no chat bridge: nothing to do");
        return Ok(ExitCode::SUCCESS);
    }
    let running = nucleic_client::read_daemon_file(home).is_some();
    if running && answer(home, 0, |state| state != "running").await.is_none() {
        bail!("the daemon's bridge is still running after {} s", ANSWER_WITHIN.as_secs());
    }
    println!("chat bridge disabled (the pairings are kept: `nucleic chat list`)");
    Ok(ExitCode::SUCCESS)
}

/// Waits for `status.json` to hold a state `done` accepts, written at `since` (unix ms) or
/// later: the state and its reason.
async fn answer(
    home: &Path,
    since: i64,
    done: impl Fn(&str) -> bool,
) -> Option<(String, Option<String>)> {
    let until = Instant::now() + ANSWER_WITHIN;
    while Instant::now() < until {
        if let Some(status) = std::fs::read_to_string(status_file(home))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            let state = status["state"].as_str().unwrap_or_default();
            if status["at"].as_i64().unwrap_or(0) >= since && done(state) {
                let reason = status["reason"].as_str().map(str::to_owned);
                return Some((state.to_owned(), reason));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Writes the state of a bridge that is not running (could not start, or waits to try again).
fn write_state(home: &Path, state: &str, reason: &str) {
    let status = serde_json::json!({
        "state": state,
        "reason": reason,
        "at": bridge::now_ms(),
        "pid": std::process::id(),
    });
    let _ = std::fs::write(status_file(home), format!("{status}\n"));
}

/// How one run of the bridge ended.
enum Ended {
    /// Told to stop.
    Stopped,
    /// Stopped for good until the setup changes: refused credentials, another poller elsewhere.
    ForGood(String),
    /// Could not start or lost something it can get back (the lock, the homeserver, the disk):
    /// tried again after a while.
    Again(String),
}

/// A bridge the daemon runs: on a thread of its own (the bridge's futures hold a client by
/// reference across awaits, so they are not `Send`).
struct Running {
    setup: BridgeSetup,
    stopping: watch::Sender<bool>,
    ended: oneshot::Receiver<Ended>,
}

impl Running {
    fn start(home: PathBuf, setup: BridgeSetup, account: Account) -> Running {
        let (stopping, stopped) = watch::channel(false);
        let (tell, ended) = oneshot::channel();
        let for_thread = setup.clone();
        let spawned = std::thread::Builder::new().name("chat-bridge".into()).spawn(move || {
            let ended = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime.block_on(run_bounded(home, for_thread, account, stopped)),
                Err(e) => Ended::Again(format!("cannot make its runtime: {e}")),
            };
            let _ = tell.send(ended);
        });
        if let Err(e) = spawned {
            println!("nucleic: chat bridge: cannot start its thread: {e}");
        }
        Running { setup, stopping, ended }
    }

    /// How it ended, if it has.
    fn ended(&mut self) -> Option<Ended> {
        match self.ended.try_recv() {
            Ok(ended) => Some(ended),
            Err(oneshot::error::TryRecvError::Empty) => None,
            Err(oneshot::error::TryRecvError::Closed) => {
                Some(Ended::Again("the bridge's thread ended".into()))
            }
        }
    }

    /// Tells it to stop and waits for it (it cuts itself after [`STOP_WITHIN`]).
    async fn halt(self) {
        let _ = self.stopping.send(true);
        let _ = tokio::time::timeout(STOP_WITHIN + Duration::from_secs(1), self.ended).await;
    }
}

/// Runs the daemon's chat bridge while `chat/bridge.json` says so, until `stop` turns true.
pub async fn supervise(home: PathBuf, mut stop: watch::Receiver<bool>) {
    let mut current: Option<Running> = None;
    // The setup whose bridge stopped for good, and the one waiting to be tried again.
    let mut given_up: Option<BridgeSetup> = None;
    let mut retry: Option<(BridgeSetup, Instant, Duration)> = None;
    let mut said_unreadable = false;
    loop {
        let wanted = match wanted(&home) {
            Ok(wanted) => {
                said_unreadable = false;
                wanted
            }
            Err(e) => {
                if !said_unreadable {
                    println!("nucleic: chat bridge not started: {e:#}");
                    write_state(&home, "failed", &format!("{e:#}"));
                    said_unreadable = true;
                }
                None
            }
        };
        let wanted_setup = wanted.as_ref().map(|(s, _)| s.clone());
        // A bridge that ended on its own.
        if let Some(ended) = current.as_mut().and_then(Running::ended)
            && let Some(running) = current.take()
        {
            match ended {
                Ended::Stopped => {}
                Ended::ForGood(why) => {
                    println!(
                        "nucleic: chat bridge stopped: {why} (fix it, then `nucleic chat enable` again)"
                    );
                    given_up = Some(running.setup);
                }
                Ended::Again(why) => {
                    let wait =
                        retry.as_ref().map_or(RETRY_FIRST, |(_, _, w)| (*w * 2).min(RETRY_MAX));
                    println!("nucleic: chat bridge: {why}; trying again in {} s", wait.as_secs());
                    write_state(&home, "retrying", &why);
                    retry = Some((running.setup, Instant::now() + wait, wait));
                }
            }
        }
        // A bridge whose setup was changed or removed.
        if current.as_ref().is_some_and(|r| Some(&r.setup) != wanted_setup.as_ref())
            && let Some(running) = current.take()
        {
            running.halt().await;
        }
        if given_up.as_ref() != wanted_setup.as_ref() {
            given_up = None;
        }
        if retry.as_ref().is_some_and(|(setup, _, _)| Some(setup) != wanted_setup.as_ref()) {
            retry = None;
        }
        let due = retry.as_ref().is_none_or(|(_, at, _)| Instant::now() >= *at);
        if let Some((setup, account)) = wanted
            && current.is_none()
            && given_up.is_none()
            && due
        {
            current = Some(Running::start(home.clone(), setup, account));
        }
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
    }
    if let Some(running) = current {
        running.halt().await;
    }
}

/// [`run_once`], cut [`STOP_WITHIN`] after it was told to stop if it has not by then.
async fn run_bounded(
    home: PathBuf,
    setup: BridgeSetup,
    account: Account,
    stopped: watch::Receiver<bool>,
) -> Ended {
    let mut told = stopped.clone();
    tokio::select! {
        ended = run_once(home, setup, account, stopped) => ended,
        () = async {
            let _ = told.wait_for(|s| *s).await;
            tokio::time::sleep(STOP_WITHIN).await;
        } => {
            println!("nucleic: chat bridge did not stop within {} s: cut", STOP_WITHIN.as_secs());
            Ended::Stopped
        }
    }
}

/// One run of the bridge: sign in, take the lock, connect to this daemon, bridge until told to
/// stop or until it fails.
async fn run_once(
    home: PathBuf,
    setup: BridgeSetup,
    account: Account,
    mut stopped: watch::Receiver<bool>,
) -> Ended {
    let (transport, lock, what) = match open_account(&home, &account).await {
        Ok(opened) => opened,
        Err(OpenFailure::Held(e) | OpenFailure::Other(e)) => return Ended::Again(format!("{e:#}")),
    };
    let name = format!("{} bridge", transport.name());
    let connected = async {
        let requests = crate::daemon::connect_own(&home, "chat", &name).await?;
        let events = crate::daemon::connect_own(&home, "chat", &format!("{name} (events)")).await?;
        anyhow::Ok((requests, events))
    };
    let (requests, events) = match connected.await {
        Ok(clients) => clients,
        Err(e) => return Ended::Again(format!("cannot reach this daemon: {e:#}")),
    };
    println!("nucleic: chat bridge polling {what} (lock {})", lock.path().display());
    let config = bridge_config(&home, transport, setup.agent, setup.poll_secs);
    let result = bridge::run(config, requests, events, async move {
        let _ = stopped.wait_for(|s| *s).await;
    })
    .await;
    drop(lock);
    match result {
        Ok(_) => Ended::Stopped,
        Err(e @ (BridgeError::Conflict(_) | BridgeError::Unauthorized(_))) => {
            Ended::ForGood(e.to_string())
        }
        Err(
            e @ (BridgeError::Outbox(_)
            | BridgeError::State(_)
            | BridgeError::Pairing(_)
            | BridgeError::Client(_)
            | BridgeError::Gone(_)),
        ) => Ended::Again(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_private_from_the_start_and_a_damaged_setup_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        assert!(wanted(home).unwrap().is_none());
        write_private(&token_file(home), b"123:abc\n").unwrap();
        let mode = std::fs::metadata(token_file(home)).unwrap().permissions();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777, 0o600);
        std::fs::write(setup_file(home), "{\"matrix\": 1}").unwrap();
        let e = wanted(home).unwrap_err();
        assert!(format!("{e:#}").contains("bridge.json is damaged"), "{e:#}");
        let setup = BridgeSetup {
            matrix: None,
            api: "http://127.0.0.1:9".into(),
            agent: None,
            poll_secs: 25,
            enabled_at: 7,
        };
        std::fs::write(setup_file(home), serde_json::to_string(&setup).unwrap()).unwrap();
        let (read, account) = wanted(home).unwrap().unwrap();
        assert_eq!(read, setup);
        assert_eq!(account.token, "123:abc");
        std::fs::write(token_file(home), " \n").unwrap();
        assert!(format!("{:#}", wanted(home).unwrap_err()).contains("empty"));
    }
}
