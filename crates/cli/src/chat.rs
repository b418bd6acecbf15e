//! `nucleic chat`: the chat bridge in the foreground, on Telegram or (`--matrix`) on a Matrix
//! account (one poller per bot token or account), and `nucleic chat pair|list|unpair`: who may
//! command the host from a chat.

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

#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// Print a one-time pairing code (8 characters, 10 minutes): send `/cc pair <code>` to the
    /// bot from the chat account that may command this host.
    Pair,
    /// The chat accounts paired with this host, and how many strangers were ignored.
    List,
    /// Unpair a chat account (its user id, from `nucleic chat list`: `123`, `@alice:example.org`).
    Unpair { user: String },
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
        None => run(home, args).await,
    }
}

/// `doctor`'s line for the bridge of `home`, from its `status.json`, if it ever ran.
pub fn doctor_line(home: &Path) -> Option<String> {
    let text = std::fs::read_to_string(home.join("chat").join("status.json")).ok()?;
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
            format!("chat    NOT running: `nucleic chat` (pid {pid}) died without a word")
        }
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

async fn run(home: &Path, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let http = nucleic_chat::HttpClient::public();
    let (transport, lock, what): (Arc<dyn Transport>, _, _) = match &args.matrix {
        Some(homeserver) => {
            let token = token(args.token_file.as_deref(), MATRIX_TOKEN_ENV)?;
            let matrix = Matrix::connect(http, homeserver, &token)
                .await
                .with_context(|| format!("signing in to the Matrix homeserver {homeserver}"))?;
            let lock = PollerLock::acquire(home, &format!("matrix:{}", matrix.user_id()))?;
            let what = format!("the Matrix account {}", matrix.user_id());
            (Arc::new(matrix), lock, what)
        }
        None => {
            let token = token(args.token_file.as_deref(), TOKEN_ENV)?;
            let lock = PollerLock::acquire(home, &token)?;
            (Arc::new(Telegram::new(http, &args.api, &token)), lock, "the bot".to_owned())
        }
    };
    let name = format!("{} bridge", transport.name());
    let requests = crate::daemon::connect_as(home, "chat", &name).await?;
    let events = crate::daemon::connect_as(home, "chat", &format!("{name} (events)")).await?;
    let config = BridgeConfig {
        store: store(home),
        status_file: home.join("chat").join("status.json"),
        transport,
        agent: args.agent,
        poll_wait: Duration::from_secs(args.poll_secs),
    };
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
