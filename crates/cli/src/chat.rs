//! `nucleic chat`: the chat bridge in the foreground, on Telegram or (`--matrix`) on a Matrix
//! account (one poller per bot token or account); `nucleic chat pair|list|unpair`: who may
//! command the host from a chat; `enable|disable`: the bridge inside the daemon.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;
use nucleic_chat::bridge::{self, BridgeConfig};
use nucleic_chat::lock::PollerLock;
use nucleic_chat::matrix::Matrix;
use nucleic_chat::pairing::Pairing;
use nucleic_chat::telegram::Telegram;
use nucleic_chat::transport::Transport;
use nucleic_protocol::Backend;

/// The variable the bot token is read from.
pub const TOKEN_ENV: &str = "NUCLEIC_TELEGRAM_TOKEN";
/// The variable a Matrix access token is read from.
pub const MATRIX_TOKEN_ENV: &str = "NUCLEIC_MATRIX_TOKEN";

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ChatArgs {
    #[command(subcommand)]
    command: Option<ChatCommand>,
    #[command(flatten)]
    bridge: BridgeArgs,
}

/// Which account a bridge polls and how: `nucleic chat`'s and `nucleic chat enable`'s options.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// The agent new sessions run (default: the project's).
    #[arg(long, value_parser = crate::agent_parser())]
    agent: Option<Backend>,
    /// A file holding the bot token, or with --matrix the account's access token (default:
    /// $NUCLEIC_TELEGRAM_TOKEN, $NUCLEIC_MATRIX_TOKEN).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Bridge a Matrix account on this homeserver (`https://matrix.example.org`) instead of a
    /// Telegram bot.
    #[arg(long, value_name = "HOMESERVER")]
    matrix: Option<String>,
    /// The Bot API's base URL (tests point it at a mock).
    #[arg(long, hide = true, default_value = nucleic_chat::telegram::PUBLIC_API)]
    api: String,
    /// Seconds one getUpdates long poll waits.
    #[arg(long, hide = true, default_value_t = 25)]
    poll_secs: u64,
}

impl BridgeArgs {
    /// The account, its token read from the file or the variable.
    fn account(&self) -> anyhow::Result<Account> {
        let env = if self.matrix.is_some() { MATRIX_TOKEN_ENV } else { TOKEN_ENV };
        let token = token(self.token_file.as_deref(), env)?;
        Ok(Account { matrix: self.matrix.clone(), api: self.api.clone(), token })
    }
}

#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// Print a one-time pairing code (8 characters, 10 minutes): send `/cc pair <code>` to the
    /// bot from the chat account that may command this host.
    Pair,
    /// The chat accounts paired with this host, and how many strangers were ignored.
    List,
    /// Unpair a chat account (its user id, from `nucleic chat list`: `123`, `@alice:example.org`).
    Unpair { user: String },
    /// Run the bridge inside the daemon from now on, and at every start of `nucleic serve` (or
    /// the service): the token given now is kept 0600 in the data dir.
    ///
    /// Example: `nucleic chat enable --token-file ~/bot-token`, then `nucleic chat pair`.
    Enable(BridgeArgs),
    /// Stop the daemon's bridge and forget its token (pairings are kept).
    Disable,
}

fn store(home: &Path) -> PathBuf {
    home.join("chat").join("chat.db")
}

pub async fn chat(home: &Path, args: ChatArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(ChatCommand::Pair) => {
            let pairing = Pairing::open(&store(home))?;
            let code = pairing.issue(bridge::now_ms())?;
            println!("{code}");
            eprintln!(
                "Send `/cc pair {code}` to the bot within 10 minutes from the chat account that may command this host."
            );
            Ok(ExitCode::SUCCESS)
        }
        Some(ChatCommand::List) => {
            let pairing = Pairing::open(&store(home))?;
            for user in pairing.list()? {
                println!("{}  chat {}  paired at {}", user.user, user.chat, user.paired_at_ms);
            }
            let (strangers, messages) = pairing.strangers()?;
            eprintln!("{strangers} strangers ignored ({messages} messages)");
            Ok(ExitCode::SUCCESS)
        }
        Some(ChatCommand::Unpair { user }) => {
            if !Pairing::open(&store(home))?.unpair(&user)? {
                bail!("chat user {user} is not paired");
            }
            // The host stops acting for them now, not at the bridge's next report.
            let mut daemon = crate::daemon::connect(home).await?;
            let bridges: nucleic_protocol::ChatBridges =
                daemon.intent_as(nucleic_protocol::Intent::ListChatBridges).await?;
            let people: Vec<String> = bridges
                .bridges
                .iter()
                .flat_map(|b| &b.paired)
                .filter(|p| p.person.split_once(':').is_some_and(|(_, u)| u == user))
                .map(|p| p.person.clone())
                .collect();
            for person in people {
                let intent = nucleic_protocol::Intent::UnpairChatPerson { person };
                daemon.intent(intent).await?;
            }
            println!("unpaired {user}");
            Ok(ExitCode::SUCCESS)
        }
        Some(ChatCommand::Enable(bridge)) => {
            let account = bridge.account()?;
            let setup = crate::chat_service::BridgeSetup {
                matrix: account.matrix,
                api: account.api,
                agent: bridge.agent,
                poll_secs: bridge.poll_secs,
                enabled_at: bridge::now_ms(),
            };
            crate::chat_service::enable(home, setup, &account.token).await
        }
        Some(ChatCommand::Disable) => crate::chat_service::disable(home).await,
        None => run(home, args).await,
    }
}

/// `doctor`'s line for the bridge of `home`, from its `status.json`, if it ever ran.
pub fn doctor_line(home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(status_file(home)).ok()?;
    let status: serde_json::Value = serde_json::from_str(&text).ok()?;
    let pid = status["pid"].as_u64().unwrap_or(0);
    let alive = Path::new(&format!("/proc/{pid}")).exists();
    let counts = format!(
        "{} updates, {} commands, {} from strangers ignored, {} reports",
        status["updates"], status["commands"], status["strangers"], status["reports"]
    );
    Some(match (status["state"].as_str(), alive) {
        (Some("running"), true) => format!("chat    running (pid {pid}) — {counts}"),
        (Some("running"), false) => {
            format!("chat    NOT running: the bridge (pid {pid}) died without a word")
        }
        (Some("retrying"), _) => format!(
            "chat    WAITING: {} — the daemon tries again",
            status["reason"].as_str().unwrap_or("?")
        ),
        (Some("failed"), _) => format!(
            "chat    STOPPED: {} — next: fix it and start `nucleic chat` again",
            status["reason"].as_str().unwrap_or("?").trim_start_matches("stopped: ")
        ),
        _ => format!("chat    stopped — {counts}"),
    })
}

fn token(file: Option<&Path>, env: &str) -> anyhow::Result<String> {
    let token = match file {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the token from {}", path.display()))?,
        None => std::env::var(env)
            .with_context(|| format!("no token: set {env} or pass --token-file (docs/chat.md)"))?,
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        bail!("the bot token is empty");
    }
    Ok(token)
}

/// Where the bridge's account is and its secret: what `nucleic chat` is given on its command
/// line, and what `nucleic chat enable` keeps for the daemon.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    /// `Some(homeserver)` for a Matrix account, `None` for a Telegram bot.
    pub matrix: Option<String>,
    /// The Bot API's base URL (Telegram only).
    pub api: String,
    /// The bot token or the Matrix access token.
    pub token: String,
}

/// Why a bridge could not start.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    /// Another process polls this account here (its pid in the sentence).
    Held(anyhow::Error),
    /// Anything else (the homeserver unreachable, refused credentials).
    Other(anyhow::Error),
}

/// Signs in to `account` (Matrix asks the homeserver who the token is) and takes its poller
/// lock: the transport, the lock, and what it polls in words.
pub(crate) async fn open_account(
    home: &Path,
    account: &Account,
) -> Result<(Arc<dyn Transport>, PollerLock, String), OpenFailure> {
    let http = nucleic_chat::HttpClient::public();
    let held = |e: nucleic_chat::lock::LockError| match e {
        held @ nucleic_chat::lock::LockError::Held { .. } => OpenFailure::Held(held.into()),
        other => OpenFailure::Other(other.into()),
    };
    match &account.matrix {
        Some(homeserver) => {
            let matrix = Matrix::connect(http, homeserver, &account.token)
                .await
                .with_context(|| format!("signing in to the Matrix homeserver {homeserver}"))
                .map_err(OpenFailure::Other)?;
            let lock =
                PollerLock::acquire(home, &format!("matrix:{}", matrix.user_id())).map_err(held)?;
            let what = format!("the Matrix account {}", matrix.user_id());
            Ok((Arc::new(matrix), lock, what))
        }
        None => {
            let lock = PollerLock::acquire(home, &account.token).map_err(held)?;
            let telegram = Telegram::new(http, &account.api, &account.token);
            Ok((Arc::new(telegram), lock, "the bot".to_owned()))
        }
    }
}

/// The bridge's configuration for the data dir `home`.
pub(crate) fn bridge_config(
    home: &Path,
    transport: Arc<dyn Transport>,
    agent: Option<Backend>,
    poll_secs: u64,
) -> BridgeConfig {
    BridgeConfig {
        store: store(home),
        status_file: status_file(home),
        transport,
        agent,
        poll_wait: Duration::from_secs(poll_secs),
    }
}

/// `status.json`: the bridge's state for `doctor` and `nucleic chat enable`.
pub(crate) fn status_file(home: &Path) -> PathBuf {
    home.join("chat").join("status.json")
}

async fn run(home: &Path, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let account = args.bridge.account()?;
    let (transport, lock, what) = match open_account(home, &account).await {
        Ok(opened) => opened,
        Err(OpenFailure::Held(e) | OpenFailure::Other(e)) => return Err(e),
    };
    let name = format!("{} bridge", transport.name());
    let requests = crate::daemon::connect_as(home, "chat", &name).await?;
    let events = crate::daemon::connect_as(home, "chat", &format!("{name} (events)")).await?;
    let config = bridge_config(home, transport, args.bridge.agent, args.bridge.poll_secs);
    let mut signals = crate::signals::StopSignals::install()?;
    eprintln!("nucleic chat: polling {what} (lock {})", lock.path().display());
    let stopped = async move {
        signals.next().await;
    };
    let stats = bridge::run(config, requests, events, stopped).await?;
    eprintln!(
        "nucleic chat: stopped ({} updates, {} duplicates ignored, {} commands, {} from strangers ignored, {} reports)",
        stats.updates, stats.duplicates, stats.commands, stats.strangers, stats.reports
    );
    drop(lock);
    Ok(ExitCode::SUCCESS)
}
