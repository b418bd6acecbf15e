//! The `nucleic` binary: argument parsing and dispatch. Everything with substance lives in the
//! library crates; this file only turns errors into one line on stderr and an exit code. It is the
//! only crate using `anyhow`.
//!
//! The hidden entry points (`__confine`, `__keeper`, `__sim-agent`: `nucleic_agents::entry_points`)
//! are dispatched before any argument parsing, by this binary and by `nucleic-host`'s
//! `nucleic-entry-points`, which the host's own tests and benches start instead.
//!
//! - `run`: `nucleic run`, one session in place in the foreground; `render`: its events rendered
//!   for people; `plan_prompt`: plans and questions on the terminal.
//! - `doctor`: `nucleic doctor`, the tools present and the relay connection's state too.
//! - `serve`: `nucleic serve`, the daemon (`--relay URL`: remote access, `--relay-ca FILE` for a
//!   self-hosted relay's CA, `--allow-plain-relay` for `ws://` off loopback; `--lan ADDR`: the
//!   channel directly; `--no-tcp`: no TCP port, the CLI uses `daemon.sock`); `signals`: stopping on
//!   Ctrl-C or SIGTERM; `tuning`: its timing knobs from the environment.
//! - `devices`: `nucleic pair` (a QR code and a one-time pairing link), `device list|revoke`,
//!   `token rotate`.
//! - `open`: `nucleic open`, a sign-in link of the daemon.
//! - `demo` (`demo.rs`): `nucleic demo`, a host in process on a throwaway repository with three
//!   simulated sessions, for people and the browser suite.
//! - `project_commands`, `checks`, `sandbox`: `nucleic project …`.
//! - `commands`, `attach`, `approvals`, `review`, `pull_request`, `disk`: `nucleic session …`,
//!   `import` and `gc`.
//! - `rules`: `nucleic rules list|add|rm`, on the rule files directly.
//! - `nucleic tui`: the terminal cockpit (`nucleic-tui`), two clients of the daemon.
//! - `chat`: `nucleic chat`, the Telegram bridge (`nucleic-chat`) in the foreground, and
//!   `chat pair|list|unpair`.
//! - `service`: `nucleic service install|uninstall|status`, the daemon as a systemd user unit.
//! - `daemon` (`daemon.rs`): its daemon through `nucleic-client`, starting `nucleic serve` only
//!   when no host holds `host.lock` (`home_lock.rs`: one host per `NUCLEIC_HOME`).
//! - `remote_hosts`: `nucleic remote pair|list|forget`, this machine as a paired device; the
//!   global `--remote HOST` sends daemon commands to such a host through its relay.
//! - `locate`: finding agent executables and the home.

mod approvals;
mod attach;
mod chat;
mod chat_service;
mod checks;
mod commands;
mod daemon;
mod demo;
mod devices;
mod disk;
mod doctor;
mod home_lock;
mod locate;
mod mcp_commands;
mod open;
mod outside;
mod plan_prompt;
mod project_commands;
mod pull_request;
mod remote_hosts;
mod render;
mod review;
mod rules;
mod run;
mod sandbox;
mod serve;
mod service;
mod signals;
mod tuning;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Nucleic runs many coding agents (Claude Code, Codex, a built-in simulated agent) side by side,
/// each in its own git worktree and confined by the kernel, and lets you watch, approve, steer
/// and merge them from the web cockpit, your phone or this CLI.
#[derive(Debug, Parser)]
#[command(name = "nucleic", version, about, after_help = GETTING_STARTED)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
    /// Send this command to a host paired with `nucleic remote pair` (its id, or the start of
    /// it, or its machine name) through its relay, instead of this machine's daemon.
    #[arg(long, env = "NUCLEIC_REMOTE", global = true)]
    remote: Option<String>,
}

/// The top-level help's example path, from nothing to a first session.
const GETTING_STARTED: &str = "Getting started:
  nucleic demo                      the cockpit with three simulated sessions (no API key)
  nucleic doctor                    what is installed, and the next step
  nucleic project add ~/src/app     a git repository for sessions to run in (prints its id)
  nucleic session new --project <id> --agent claude \"Fix the flaky login test\"
  nucleic open                      a sign-in link to the cockpit (starts the daemon)
  nucleic service install           keep the daemon running (a systemd user service)
Every command has --help. The docs: docs/README.md";

#[derive(Debug, Subcommand)]
enum Commands {
    /// Run one agent session in place (no worktree), in the foreground.
    Run(Box<RunArgs>),
    /// Find claude, codex and git, show their versions, and say what is missing or untested.
    Doctor,
    /// Run the daemon: owns all sessions, serves the sync protocol on loopback.
    Serve {
        /// Address to listen on (default: a fixed loopback port).
        #[arg(long, default_value = "127.0.0.1:7878")]
        bind: std::net::SocketAddr,
        /// Where data lives (default: $NUCLEIC_HOME, else the XDG data dir).
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
        /// Reach paired devices through this relay (`relay/`, e.g. wss://relay.example): the
        /// daemon dials out; nothing listens publicly. `nucleic pair` then pairs a phone.
        #[arg(long, env = "NUCLEIC_RELAY")]
        relay: Option<String>,
        /// Where devices load the cockpit from (the pairing link's base; default: the relay's
        /// http(s) address).
        #[arg(long, env = "NUCLEIC_APP_URL", requires = "relay")]
        app_url: Option<String>,
        /// A PEM file of CA certificates trusted for a wss:// relay besides the public Web PKI
        /// (Mozilla's roots, built in): a self-hosted relay with its own CA.
        #[arg(long, env = "NUCLEIC_RELAY_CA", requires = "relay")]
        relay_ca: Option<PathBuf>,
        /// Accept a plain ws:// relay on another machine (by default ws:// is accepted only on
        /// loopback: frames stay end-to-end encrypted, but the room, sizes and timing cross the
        /// network in the clear and anyone on the path can pose as the relay).
        #[arg(long, requires = "relay")]
        allow_plain_relay: bool,
        /// Listen on no TCP port at all: local clients (this CLI) use the Unix socket
        /// `$NUCLEIC_HOME/daemon.sock` (0600); devices come through the relay.
        #[arg(long, conflicts_with = "bind")]
        no_tcp: bool,
        /// Also accept devices directly on this address (e.g. 0.0.0.0:7879): only the Noise
        /// channel is served there, end-to-end encrypted like through the relay.
        #[arg(long, requires = "relay")]
        lan: Option<std::net::SocketAddr>,
        /// `Host` names the LAN listener answers to besides its address (a reverse proxy or
        /// tunnel such as `tailscale serve`); offered in pairing links as `ws://NAME`.
        #[arg(long = "allow-host", requires = "lan")]
        allow_host: Vec<String>,
    },
    /// Pair a phone through the relay: prints a QR code and a one-time link (10 minutes,
    /// single use). The daemon must run with `--relay`.
    Pair {
        /// The name the device is recorded under (`nucleic device list`).
        #[arg(long)]
        name: Option<String>,
        /// Print the link and its details as one JSON line instead of the QR code.
        #[arg(long)]
        json: bool,
        /// Seconds the link stays valid (at most and by default 600).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=600))]
        ttl_secs: Option<u32>,
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
    },
    /// A demo: the host on a throwaway repository with three simulated sessions, served with a
    /// sign-in link (no API key, no agent CLI). Ctrl-C stops it and removes what it created.
    Demo(Box<demo::DemoArgs>),
    /// Print a one-time link that signs a browser in to the daemon's web app (starts the daemon
    /// if needed).
    Open {
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
    },
    /// Devices signed in to the daemon: list them, revoke one.
    Device {
        #[command(subcommand)]
        command: devices::DeviceCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// The host token (what the CLI authenticates with): rotate it, signing every device out.
    Token {
        #[command(subcommand)]
        command: devices::TokenCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Nucleic's permission rules of the host and its projects: list, add, remove.
    Rules {
        #[command(subcommand)]
        command: rules::RulesCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Projects: git repositories sessions run in.
    Project {
        #[command(subcommand)]
        command: project_commands::ProjectCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Sessions: agents in worktrees, through the daemon (started if needed).
    Session {
        #[command(subcommand)]
        command: commands::SessionCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Import a Claude Code transcript, a Codex rollout or a Nucleic export as a read-only
    /// session.
    Import {
        path: PathBuf,
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
    },
    /// The daemon as a systemd user service: install (enable, start), uninstall, status.
    Service {
        #[command(subcommand)]
        command: service::ServiceCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Run and steer sessions from Telegram with `/cc` commands: the bridge in the foreground
    /// (one per bot token; the token from $NUCLEIC_TELEGRAM_TOKEN or --token-file), and
    /// `chat pair|list|unpair` for who may use it (docs/chat.md).
    Chat {
        #[command(flatten)]
        args: Box<chat::ChatArgs>,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Serve this home's host as an MCP server on stdin/stdout, as the grant whose credential
    /// is in $NUCLEIC_MCP_CREDENTIAL (docs/mcp.md), for Claude Code's `claude mcp add` or
    /// Codex's config.toml; `mcp grant|revoke|list` for what each MCP client may do.
    Mcp {
        #[command(subcommand)]
        command: Option<mcp_commands::McpCommand>,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Nucleic as an ACP agent on stdin/stdout, for an editor's agent panel (Zed's
    /// `agent_servers`, JetBrains, Neovim; docs/acp.md): the editor's folder picks the project,
    /// each thread is a Nucleic session in its own worktree that goes on when the editor closes.
    Acp {
        /// The agent of new sessions (the project's default when absent).
        #[arg(long, value_parser = crate::agent_parser())]
        agent: Option<nucleic_protocol::Backend>,
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
    },
    /// The terminal cockpit: every session, the inbox of approvals (single keys: a allow, d
    /// deny, A always), a session's transcript and a composer; `?` lists the keys
    /// (docs/tui.md). Starts the daemon if none runs.
    Tui {
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
    },
    /// This machine as a paired device of a host elsewhere: `remote pair LINK` (the link the
    /// host's `nucleic pair` printed), `remote list`, `remote forget HOST`; then `--remote HOST`
    /// on any daemon command (session, project, tui, device list) goes through the relay.
    Remote {
        #[command(subcommand)]
        command: remote_hosts::RemoteCommand,
        #[arg(long, env = "NUCLEIC_HOME", global = true)]
        home: Option<PathBuf>,
    },
    /// Find worktrees no session owns (dry run); `--apply` removes them.
    Gc {
        #[arg(long)]
        apply: bool,
        #[arg(long, env = "NUCLEIC_HOME")]
        home: Option<PathBuf>,
    },
}

/// `--agent`: a backend by its name on the command line (`nucleic_agents::BACKENDS`).
pub fn agent_parser() -> impl clap::builder::TypedValueParser<Value = nucleic_protocol::Backend> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let names = nucleic_agents::BACKENDS.iter().map(|d| PossibleValue::new(d.name).help(d.about));
    PossibleValuesParser::new(names).try_map(|name| {
        nucleic_agents::backend_named(&name).map(|d| d.backend).ok_or("no such agent")
    })
}

/// How `run` answers approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApproveMode {
    /// Ask on the terminal.
    Ask,
    /// Allow every request (for scripts).
    Allow,
    /// Deny every request (for scripts).
    Deny,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The agent to run.
    #[arg(long, value_parser = agent_parser(), default_value = "claude")]
    agent: nucleic_protocol::Backend,
    /// Working directory for the agent (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// How to answer approval requests.
    #[arg(long, value_enum, default_value = "ask")]
    approve: ApproveMode,
    /// Print only normalized events, one JSON object per line.
    #[arg(long)]
    json: bool,
    /// Model to use.
    #[arg(long)]
    model: Option<String>,
    /// Resume an earlier agent conversation by its id.
    #[arg(long)]
    resume: Option<String>,
    /// With --resume: continue in a new conversation that carries the history.
    #[arg(long, requires = "resume")]
    fork: bool,
    /// With --agent codex: run `codex exec --json` (one prompt, no approvals; the permission
    /// mode picks the sandbox, `default` and `plan` being read-only).
    #[arg(long)]
    exec: bool,
    /// Agent permission mode (default asks before edits and unknown commands).
    #[arg(long, default_value = "default")]
    permission_mode: String,
    /// Text appended to the agent's system prompt.
    #[arg(long)]
    append_system_prompt: Option<String>,
    /// The agent executable to run instead of the one found on PATH.
    #[arg(long)]
    agent_bin: Option<PathBuf>,
    /// Deny a pending approval after this many seconds without an answer.
    #[arg(long)]
    approval_timeout: Option<u64>,
    /// Stop the agent (and fail) when it produces no output for this many seconds (Codex: when
    /// a turn makes no progress; its retries do not count).
    #[arg(long)]
    idle_timeout: Option<u64>,
    /// Where sessions are stored (default: $NUCLEIC_HOME, else the XDG data dir).
    #[arg(long, env = "NUCLEIC_HOME")]
    home: Option<PathBuf>,
    /// What to ask the agent.
    #[arg(required = true, num_args = 1..)]
    prompt: Vec<String>,
}

/// `nucleic doctor | head`: a reader that went away ends the program quietly with a SIGPIPE's
/// status (141), as other command-line tools do, instead of a panic's message (Rust ignores
/// SIGPIPE, so `println!` panics on the broken pipe).
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // The host's own entry points (a sandbox's first process, a keeper, the simulated agent):
    // nothing else is parsed or set up for them.
    if let Some(code) = nucleic_agents::entry_points::run_if_asked() {
        return code;
    }
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    if let Some(host) = cli.remote {
        if let Some(name) = local_only(&cli.command) {
            eprintln!("nucleic: --remote: `nucleic {name}` runs on this machine only");
            return ExitCode::from(2);
        }
        daemon::use_remote(host);
    }
    match cli.command {
        Commands::Doctor => doctor::doctor(),
        Commands::Run(args) => block_on(run::run(*args)),
        Commands::Serve {
            bind,
            home,
            relay,
            app_url,
            relay_ca,
            allow_plain_relay,
            no_tcp,
            lan,
            allow_host,
        } => match locate::nucleic_home(home) {
            Some(home) => {
                let remote = relay.map(|relay| serve::RemoteArgs {
                    relay,
                    app_url,
                    relay_ca,
                    allow_plain_relay,
                    lan,
                    allow_host,
                });
                let bind = if no_tcp { serve::Bind::UnixOnly } else { serve::Bind::Tcp(bind) };
                block_on(serve::serve(home, bind, remote))
            }
            None => no_home(),
        },
        Commands::Pair { name, json, ttl_secs, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(devices::pair(&home, name, ttl_secs, json)),
            None => no_home(),
        },
        Commands::Demo(args) => block_on(demo::demo(*args)),
        Commands::Open { home } => match locate::nucleic_home(home) {
            Some(home) => block_on(open::open(&home)),
            None => no_home(),
        },
        Commands::Device { command, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(devices::device(&home, command)),
            None => no_home(),
        },
        Commands::Token { command, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(devices::token(&home, command)),
            None => no_home(),
        },
        Commands::Rules { command, home } => match locate::nucleic_home(home) {
            Some(home) => match rules::rules(&home, command) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("nucleic: {e:#}");
                    ExitCode::FAILURE
                }
            },
            None => no_home(),
        },
        Commands::Project { command, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(project_commands::project(&home, command)),
            None => no_home(),
        },
        Commands::Session { command, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(commands::session(&home, command)),
            None => no_home(),
        },
        Commands::Import { path, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(commands::import(&home, &path)),
            None => no_home(),
        },
        Commands::Service { command, home } => match locate::nucleic_home(home) {
            Some(home) => match service::run(command, &home) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("nucleic: {e:#}");
                    ExitCode::from(2)
                }
            },
            None => no_home(),
        },
        Commands::Chat { args, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(chat::chat(&home, *args)),
            None => no_home(),
        },
        Commands::Mcp { command, home } => match (locate::nucleic_home(home), command) {
            (Some(home), None) => block_on(mcp_commands::serve(&home)),
            (Some(home), Some(command)) => block_on(mcp_commands::command(&home, command)),
            (None, _) => no_home(),
        },
        Commands::Acp { agent, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(acp(&home, agent)),
            None => no_home(),
        },
        Commands::Tui { home } => match locate::nucleic_home(home) {
            Some(home) => block_on(tui(&home)),
            None => no_home(),
        },
        Commands::Remote { command, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(remote_hosts::remote(&home, command)),
            None => no_home(),
        },
        Commands::Gc { apply, home } => match locate::nucleic_home(home) {
            Some(home) => block_on(disk::gc(&home, apply)),
            None => no_home(),
        },
    }
}

/// The name of a command that never talks to a daemon through the sync protocol (so cannot go
/// to a `--remote` host), or `None`.
fn local_only(command: &Commands) -> Option<&'static str> {
    match command {
        Commands::Run(_) => Some("run"),
        Commands::Doctor => Some("doctor"),
        Commands::Serve { .. } => Some("serve"),
        Commands::Demo(_) => Some("demo"),
        Commands::Rules { .. } => Some("rules"),
        Commands::Service { .. } => Some("service"),
        Commands::Remote { .. } => Some("remote"),
        Commands::Mcp { .. } => Some("mcp"),
        Commands::Acp { .. } => Some("acp"),
        // A sign-in link of this machine's daemon; a file path read here.
        Commands::Open { .. } => Some("open"),
        Commands::Import { .. } => Some("import"),
        Commands::Pair { .. }
        | Commands::Device { .. }
        | Commands::Token { .. }
        | Commands::Project { .. }
        | Commands::Session { .. }
        | Commands::Chat { .. }
        | Commands::Tui { .. }
        | Commands::Gc { .. } => None,
    }
}

/// `nucleic acp`: the ACP agent on stdio, a client of the home's daemon (started if none runs).
async fn acp(
    home: &std::path::Path,
    backend: Option<nucleic_protocol::Backend>,
) -> anyhow::Result<ExitCode> {
    let options = nucleic_acp::AcpOptions { daemon: daemon::local_daemon(home), backend };
    nucleic_acp::serve_stdio(options).await?;
    Ok(ExitCode::SUCCESS)
}

/// `nucleic tui`: the terminal cockpit, a client of the home's daemon (two connections: one
/// follows events, one makes requests, so the screen never waits on a reply).
async fn tui(home: &std::path::Path) -> anyhow::Result<ExitCode> {
    let requests = daemon::connect_as(home, "tui", "terminal cockpit").await?;
    let events = daemon::connect_following(home, "tui-events", "terminal cockpit").await?;
    nucleic_tui::run(requests, events).await?;
    Ok(ExitCode::SUCCESS)
}

fn no_home() -> ExitCode {
    eprintln!("nucleic: cannot tell where data lives: set NUCLEIC_HOME");
    ExitCode::from(2)
}

/// Runs `future` on a fresh runtime; an error becomes one line on stderr and exit code 2.
fn block_on(future: impl std::future::Future<Output = anyhow::Result<ExitCode>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nucleic: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(future);
    // Whatever is still running now is abandoned: an agent's output reader blocked on a pipe
    // would otherwise keep the process alive (dropping a runtime waits for them forever).
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("nucleic: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every command and subcommand says what it does in `--help`.
    #[test]
    fn every_command_has_help() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
                let name = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() {
                    missing.push(name.clone());
                }
                walk(sub, &name, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "nucleic", &mut missing);
        assert!(missing.is_empty(), "commands without help: {missing:?}");
        Cli::command().debug_assert();
    }
}
