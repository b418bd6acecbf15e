//! `nucleic project …`: adding, listing and configuring projects (pool, checks, disk, mode), as
//! a thin client of the daemon's sync protocol.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;
use nucleic_protocol::{ClientMessage, HostMessage, Intent, ProjectSummary, RuleList};

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Register a git repository.
    Add {
        path: String,
        #[arg(long)]
        name: Option<String>,
        /// Shell script run in every new worktree (e.g. "npm ci").
        #[arg(long)]
        setup: Option<String>,
        /// Gitignored files to copy into new worktrees (e.g. .env); repeatable.
        #[arg(long = "copy")]
        copy_files: Vec<String>,
        /// Worktrees kept prepared for new sessions (default 2; 0: no pool).
        #[arg(long = "pool")]
        pool_size: Option<u32>,
    },
    /// List projects.
    List,
    /// Show a project's warm worktree pool (ready, disk, error); --size changes it.
    Pool {
        project_id: String,
        /// Worktrees to keep prepared (0 turns the pool off and removes them).
        #[arg(long)]
        size: Option<u32>,
    },
    /// What the project's worktrees take, and its worktree budget and reclaim age (finished
    /// sessions' worktrees are reclaimed by `nucleic gc --apply` past either).
    Disk {
        project_id: String,
        /// Reclaim finished worktrees, oldest first, while all take more than this (500M, 20G).
        #[arg(long)]
        budget: Option<String>,
        /// Reclaim finished worktrees this long after their last event (12h, 7d).
        #[arg(long)]
        reclaim_after: Option<String>,
        /// Remove the budget and the age first.
        #[arg(long)]
        clear: bool,
    },
    /// What the project's agents see beyond the default confinement: paths exposed read-only
    /// or writable, paths hidden, egress destinations; shown, or changed and then shown.
    Sandbox {
        project_id: String,
        /// A path the agents may read (a toolchain under a hidden home).
        #[arg(long = "read-only", value_name = "PATH")]
        read_only: Vec<PathBuf>,
        /// A path the agents may write (a build cache).
        #[arg(long, value_name = "PATH")]
        writable: Vec<PathBuf>,
        /// A path hidden from the agents.
        #[arg(long, value_name = "PATH")]
        hide: Vec<PathBuf>,
        /// A destination the agents' egress proxy also allows (`host`, `host:port`, `*.domain`).
        #[arg(long = "allow-domain", value_name = "DOMAIN")]
        allow_domains: Vec<String>,
        /// Start from nothing (the defaults) before adding.
        #[arg(long)]
        clear: bool,
    },
    /// Forget a project (refused while it has unarchived sessions).
    Rm { project_id: String },
    /// Rename a project.
    Rename { project_id: String, name: String },
    /// Show the mode new sessions of a project start in; with MODE (readonly, edit, full) set
    /// it, with --clear fall back to the host's default.
    Mode {
        project_id: String,
        #[arg(conflicts_with = "clear")]
        mode: Option<String>,
        #[arg(long)]
        clear: bool,
    },
    /// A project's checks: commands the host runs itself (tests, lint, build).
    Check {
        #[command(subcommand)]
        command: crate::checks::CheckCommand,
    },
    /// The person's own Claude Code and Codex sessions of the project, made outside Nucleic,
    /// newest first: the id `adopt` takes, last activity, turns, title, a live process on one.
    Sessions {
        project_id: String,
        /// The whole result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Carry an outside session on as a Nucleic session: a new worktree off the checkout's
    /// current commit, its history first, the conversation forked (the original is left as it
    /// was); PROMPT is its first new turn. Prints the session's id and worktree (or checkout).
    Adopt {
        project_id: String,
        /// The CLI's own session id (from `nucleic project sessions`).
        session: String,
        prompt: String,
        /// readonly, edit or full (else the project's mode).
        #[arg(long)]
        mode: Option<String>,
        /// In the checkout it came from, the conversation itself carried on (not forked), under
        /// a lock no other host takes meanwhile; refused while a `claude`/`codex` holds it.
        #[arg(long)]
        in_place: bool,
    },
}

/// `2/2 ready, 41.3 MiB` (+ `; stopped: <error>`).
fn pool_text(pool: &nucleic_protocol::PoolSummary) -> String {
    let mib = pool.disk_bytes as f64 / f64::from(1u32 << 20);
    let mut text = format!("{}/{} ready, {mib:.1} MiB on disk", pool.ready, pool.size);
    if let Some(error) = &pool.error {
        text.push_str(&format!("; stopped: {error}"));
    }
    text
}

pub async fn project(home: &Path, command: ProjectCommand) -> anyhow::Result<ExitCode> {
    let mut daemon = crate::daemon::connect(home).await?;
    match command {
        ProjectCommand::Add { path, name, setup, copy_files, pool_size } => {
            let path = std::fs::canonicalize(&path)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or(path);
            let project: ProjectSummary = daemon
                .intent_as(Intent::AddProject {
                    path,
                    name,
                    setup_script: setup,
                    copy_files,
                    default_backend: None,
                    checks: Vec::new(),
                    checks_after_turn: false,
                    pool_size,
                })
                .await?;
            println!("{}", project.project_id);
        }
        ProjectCommand::List => {
            let message_id = daemon.id();
            if let HostMessage::Projects { projects, .. } =
                daemon.request(ClientMessage::ListProjects { message_id }).await?
            {
                for p in projects {
                    let pool = p.pool.as_ref().map(pool_text).unwrap_or_default();
                    println!(
                        "{}  {}  {} ({}){}",
                        p.project_id,
                        p.name,
                        p.root,
                        p.default_branch,
                        if pool.is_empty() { String::new() } else { format!("  pool: {pool}") }
                    );
                }
            }
        }
        ProjectCommand::Pool { project_id, size } => {
            if let Some(size) = size {
                daemon.intent(Intent::SetPoolSize { project_id: project_id.clone(), size }).await?;
            }
            let message_id = daemon.id();
            let HostMessage::Projects { projects, .. } =
                daemon.request(ClientMessage::ListProjects { message_id }).await?
            else {
                bail!("the daemon did not list its projects");
            };
            let Some(project) = projects.into_iter().find(|p| p.project_id == project_id) else {
                bail!("project {project_id} not found");
            };
            match project.pool {
                Some(pool) => println!("{}", pool_text(&pool)),
                None => println!("the host runs no warm worktree pools"),
            }
        }
        ProjectCommand::Disk { project_id, budget, reclaim_after, clear } => {
            return crate::disk::project_disk(
                &mut daemon,
                project_id,
                budget,
                reclaim_after,
                clear,
            )
            .await;
        }
        ProjectCommand::Sandbox { project_id, read_only, writable, hide, allow_domains, clear } => {
            let change =
                crate::sandbox::SandboxChange { read_only, writable, hide, allow_domains, clear };
            return crate::sandbox::project_sandbox(&mut daemon, project_id, change).await;
        }
        ProjectCommand::Rm { project_id } => {
            daemon.intent(Intent::RemoveProject { project_id }).await?;
        }
        ProjectCommand::Rename { project_id, name } => {
            daemon.intent(Intent::RenameProject { project_id, name }).await?;
        }
        ProjectCommand::Check { command } => {
            crate::checks::project_check(&mut daemon, command).await?;
        }
        ProjectCommand::Sessions { project_id, json } => {
            return crate::outside::list(&mut daemon, project_id, json).await;
        }
        ProjectCommand::Adopt { project_id, session, prompt, mode, in_place } => {
            let intent = Intent::AdoptSession { project_id, session, prompt, mode, in_place };
            return crate::outside::adopt(&mut daemon, intent).await;
        }
        ProjectCommand::Mode { project_id, mode, clear } => {
            let target = nucleic_protocol::RulesTarget {
                session_id: None,
                project_id: Some(project_id.clone()),
            };
            if mode.is_some() || clear {
                daemon.intent(Intent::SetProjectMode { project_id, mode }).await?;
            }
            let listed: RuleList = daemon.intent_as(Intent::ListRules(target)).await?;
            let mode = listed.project_mode.as_deref().unwrap_or("edit");
            println!("{mode}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
