//! `nucleic session …`, `import` and `gc`: thin clients of the daemon's sync protocol.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use nucleic_protocol::{
    Backend, ClientMessage, FinishAction, HostMessage, Intent, NewSession, SessionSummary,
    SessionUpdated,
};

use std::os::unix::fs::OpenOptionsExt;

use nucleic_client::Client;

/// `--format` of `session export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormatArg {
    Markdown,
    Jsonl,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Start a session in a new worktree.
    ///
    /// Example: `nucleic session new --project <id> --agent claude "Fix the flaky login test"`.
    New {
        /// The project (its name or id: `project list`).
        #[arg(long)]
        project: String,
        /// Branch or commit to start from (default: the project's default branch).
        #[arg(long)]
        base: Option<String>,
        /// Which agent runs it (default: Claude Code).
        #[arg(long, value_parser = crate::agent_parser())]
        agent: Option<Backend>,
        /// The agent's model (default: its own configuration's).
        #[arg(long)]
        model: Option<String>,
        /// The agent's own permission mode (Claude Code's `default`, `acceptEdits`, `plan`, …).
        #[arg(long)]
        permission_mode: Option<String>,
        /// The policy mode: readonly, edit or full (default: the project's, see `project mode`).
        #[arg(long)]
        mode: Option<String>,
        /// Plan first (Claude Code's `plan` mode, read-only): the agent submits a plan to approve
        /// (`session approve … --mode edit`) or reject with feedback (`session deny`).
        #[arg(long, conflicts_with = "permission_mode")]
        plan: bool,
        /// The task, as you would type it to the agent.
        #[arg(required = true, num_args = 1..)]
        prompt: Vec<String>,
    },
    /// List sessions.
    List {
        /// Only this project's.
        #[arg(long)]
        project: Option<String>,
        /// Archived ones too.
        #[arg(long)]
        all: bool,
    },
    /// Show one session's summary and its pending approvals (`approvals`: id, tool, input).
    Show { session_id: String },
    /// Stream a session's events and answer its approvals here (Ctrl-C detaches).
    Attach {
        session_id: String,
        #[arg(long, default_value_t = 1)]
        from: u64,
        /// Return once the agent's turn is over (instead of following until Ctrl-C).
        #[arg(long)]
        until_idle: bool,
    },
    /// Send a follow-up prompt.
    Send {
        session_id: String,
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
    },
    /// Allow a pending approval (the only one, when no request id is given).
    Approve {
        session_id: String,
        /// Which approval (`session show` lists them); may be left out when only one is pending.
        request_id: Option<String>,
        #[arg(long)]
        always: bool,
        /// "Always" as a rule the host keeps: for this `session`, the `project` or the `host`
        /// (implies --always).
        #[arg(long, value_parser = parse_scope)]
        scope: Option<nucleic_protocol::RuleScope>,
        /// Needed to allow a request the host rates critical (the second, explicit confirmation).
        #[arg(long)]
        confirm_critical: bool,
        /// Approve a plan (ExitPlanMode) and execute it in this mode: readonly, edit or full.
        #[arg(long, value_parser = parse_mode, conflicts_with_all = ["always", "scope"])]
        mode: Option<nucleic_protocol::SessionMode>,
    },
    /// Answer the agent's questions (AskUserQuestion): one ANSWER per question, in order — an
    /// option's label, several labels joined by "," where the question takes several, or
    /// "other:<free text>".
    Answer {
        session_id: String,
        /// Which request (`session show` lists them); may be left out when only one is pending.
        #[arg(long)]
        request: Option<String>,
        #[arg(value_name = "ANSWER", required = true, num_args = 1..)]
        answers: Vec<String>,
    },
    /// Deny a pending approval, with the reason the model will see: `deny SESSION [REQUEST]
    /// REASON` (the request id may be left out when only one is pending).
    Deny {
        session_id: String,
        #[arg(value_name = "[REQUEST] REASON", num_args = 1..=2, required = true)]
        request_and_reason: Vec<String>,
        #[arg(long)]
        stop: bool,
    },
    /// Interrupt the agent's current turn (the session stays; send a follow-up to go on).
    Interrupt { session_id: String },
    /// Stop the session's agent (its worktree and history stay; `send` resumes it).
    Stop { session_id: String },
    /// The worktree's diff vs its base (files, counts; --patch for the patch), or what one
    /// turn changed (--turn N).
    Diff {
        session_id: String,
        #[arg(long)]
        patch: bool,
        #[arg(long)]
        turn: Option<u32>,
    },
    /// Review comments on the diff's lines, sent to the agent as one follow-up.
    Review {
        #[command(subcommand)]
        command: crate::review::ReviewCommand,
    },
    /// Push the session's branch to the project's remote and open a pull request with `gh`
    /// (title and body drafted from the report; required checks gate it as they gate merge).
    Pr(crate::pull_request::PrArgs),
    /// Merge the session's work into its base branch (a merge commit).
    Merge {
        session_id: String,
        #[arg(short, long)]
        message: Option<String>,
        /// Also fast-forward a clean checkout that has the base branch checked out (by
        /// default such a merge is refused and no checkout's files change).
        #[arg(long)]
        update_checkout: bool,
        /// Merge even though required checks fail; the reason is recorded.
        #[arg(long, value_name = "REASON")]
        force: Option<String>,
    },
    /// Bring the session's work into its base branch as one commit.
    Squash {
        session_id: String,
        #[arg(short, long)]
        message: Option<String>,
        /// Also fast-forward a clean checkout that has the base branch checked out (by
        /// default such a merge is refused and no checkout's files change).
        #[arg(long)]
        update_checkout: bool,
        /// Merge even though required checks fail; the reason is recorded.
        #[arg(long, value_name = "REASON")]
        force: Option<String>,
    },
    /// Replay the session's commits onto its base branch.
    Rebase {
        session_id: String,
        #[arg(short, long)]
        message: Option<String>,
        /// Also fast-forward a clean checkout that has the base branch checked out (by
        /// default such a merge is refused and no checkout's files change).
        #[arg(long)]
        update_checkout: bool,
        /// Merge even though required checks fail; the reason is recorded.
        #[arg(long, value_name = "REASON")]
        force: Option<String>,
    },
    /// Finish the session throwing its work away (the worktree and branch are removed).
    Discard { session_id: String },
    /// Finish the session keeping its worktree and branch as they are (`rollback` removes them).
    Keep { session_id: String },
    /// Delete a kept session's worktree and branch.
    Rollback {
        session_id: String,
        #[arg(long)]
        yes: bool,
    },
    /// A new session starting from this one's changes (its conversation forked), or in another
    /// agent (`--agent`: a new conversation told the task, a summary and the changes so far).
    Continue {
        session_id: String,
        /// Another agent to continue in (a new conversation, told what happened so far).
        #[arg(long, value_parser = crate::agent_parser())]
        agent: Option<Backend>,
        #[arg(required = true, num_args = 1..)]
        prompt: Vec<String>,
    },
    /// Run the project's checks (or the one named) in the session's worktree now.
    Check { session_id: String, name: Option<String> },
    /// Measure what the session's worktree takes on disk now (build output counted apart).
    Disk { session_id: String },
    /// Remove a finished session's worktree directory to free disk; its branch and uncommitted
    /// work are kept, and a follow-up or `continue` brings it back.
    Reclaim { session_id: String },
    /// The report: the agent's claims from its last turn next to the host's facts.
    Report {
        session_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Write the session as a "Nucleic session export" (markdown) or JSONL.
    Export {
        session_id: String,
        #[arg(long, value_enum, default_value = "markdown")]
        format: ExportFormatArg,
        /// Write here instead of stdout (created 0600).
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
    },
    /// Print the command that resumes this session in a terminal.
    Handoff { session_id: String },
    /// Give the session a title (shown in lists and the cockpit).
    Rename { session_id: String, title: String },
    /// Switch the session's policy mode: readonly, edit or full (recorded in the transcript).
    Mode { session_id: String, mode: String },
    /// Hide a finished session from lists (`--undo` brings it back; `list --all` shows it).
    Archive {
        session_id: String,
        /// Bring it back.
        #[arg(long)]
        undo: bool,
    },
}

/// Answers approval `request_id` of a session, or its only pending one.
fn parse_mode(text: &str) -> Result<nucleic_protocol::SessionMode, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|_| format!("{text:?}: expected readonly, edit or full"))
}

fn parse_scope(text: &str) -> Result<nucleic_protocol::RuleScope, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|_| format!("{text:?}: expected session, project or host"))
}

async fn decide(
    daemon: &mut Client,
    session_id: String,
    request_id: Option<String>,
    decision: nucleic_protocol::Decision,
    confirmed: bool,
) -> anyhow::Result<()> {
    let request_id = match request_id {
        Some(id) => id,
        None => {
            let summary = crate::approvals::summary(daemon, &session_id).await?;
            crate::approvals::the_only_one(daemon, &summary).await?
        }
    };
    let message_id = daemon.id();
    let request = ClientMessage::Decide { message_id, session_id, request_id, decision, confirmed };
    daemon.request(request).await?;
    Ok(())
}

fn print_session(s: &SessionSummary) {
    let status = s.status.as_str();
    let approvals = if s.pending_approvals > 0 {
        format!(" ({} pending)", s.pending_approvals)
    } else {
        String::new()
    };
    let branch = s.worktree.as_ref().map(|w| w.branch.as_str()).unwrap_or("-");
    let disk = crate::disk::list_column(s);
    // A title is the agent's or the prompt's: no escape sequence of it reaches the terminal.
    let title = nucleic_tui::sanitize::line(&s.title);
    println!("{}  {status:<17}{approvals}  {branch}  {disk}  {title}", s.session_id);
}

pub async fn session(home: &Path, command: SessionCommand) -> anyhow::Result<ExitCode> {
    let mut daemon = crate::daemon::connect(home).await?;
    let finish = |session_id: String, action: FinishAction| Intent::Finish { session_id, action };
    let result = match command {
        SessionCommand::New {
            project,
            base,
            agent,
            model,
            permission_mode,
            mode,
            plan,
            prompt,
        } => {
            let permission_mode = if plan { Some("plan".to_owned()) } else { permission_mode };
            let backend = agent;
            let request = NewSession {
                project_id: project,
                base_ref: base,
                backend,
                model,
                permission_mode,
                title: None,
                mode,
                prompt: prompt.join(" "),
            };
            let summary: SessionSummary = daemon.intent_as(Intent::NewSession(request)).await?;
            print_session(&summary);
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::List { project, all } => {
            let message_id = daemon.id();
            let request = ClientMessage::ListSessions {
                message_id,
                project_id: project,
                include_archived: all,
            };
            if let HostMessage::Sessions { sessions, .. } = daemon.request(request).await? {
                sessions.iter().for_each(print_session);
            }
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::Show { session_id } => {
            let summary = crate::approvals::summary(&mut daemon, &session_id).await?;
            let pending = crate::approvals::pending(&mut daemon, &summary).await?;
            let mut shown = serde_json::to_value(&summary)?;
            shown["approvals"] = pending.iter().map(crate::approvals::as_json).collect();
            if let Some(pr) = crate::pull_request::latest(&mut daemon, &summary).await? {
                shown["pullRequest"] = serde_json::to_value(&pr)?;
            }
            println!("{}", serde_json::to_string_pretty(&shown)?);
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::Attach { session_id, from, until_idle } => {
            return crate::attach::attach(daemon, session_id, from, until_idle).await;
        }
        SessionCommand::Send { session_id, text } => {
            let message_id = daemon.id();
            daemon
                .request(ClientMessage::SendInput { message_id, session_id, text: text.join(" ") })
                .await?;
            None
        }
        SessionCommand::Approve {
            session_id,
            request_id,
            always,
            scope,
            confirm_critical,
            mode,
        } => {
            let decision = if let Some(mode) = mode {
                nucleic_protocol::Decision::ApprovePlan { mode }
            } else if always || scope.is_some() {
                nucleic_protocol::Decision::AllowAlways { scope }
            } else {
                nucleic_protocol::Decision::Allow
            };
            let summary = crate::approvals::summary(&mut daemon, &session_id).await?;
            let open = crate::approvals::pending(&mut daemon, &summary).await?;
            let request_id = match request_id {
                Some(id) => id,
                None => crate::approvals::only(&open, &session_id)?,
            };
            let is_plan = open.iter().any(|a| {
                a.request_id == request_id && a.tool_name == nucleic_protocol::EXIT_PLAN_MODE
            });
            if is_plan && mode.is_none() {
                bail!(
                    "approval {request_id} is a plan: approve it with --mode readonly|edit|full (the mode it runs in), or reject it with `session deny` and your feedback"
                );
            }
            let critical = open.iter().find(|a| {
                a.risk == Some(nucleic_protocol::Risk::Critical) && a.request_id == request_id
            });
            if let Some(a) = critical
                && !confirm_critical
            {
                bail!(
                    "approval {} is critical ({}): repeat with --confirm-critical to allow it",
                    a.request_id,
                    a.risk_reasons.join(", ")
                );
            }
            decide(&mut daemon, session_id, Some(request_id), decision, confirm_critical).await?;
            None
        }
        SessionCommand::Deny { session_id, request_and_reason, stop } => {
            let (request_id, reason) = match request_and_reason.as_slice() {
                [reason] => (None, reason.clone()),
                [request, reason] => (Some(request.clone()), reason.clone()),
                _ => bail!("give the reason, after the request id when you name one"),
            };
            let decision = if stop {
                nucleic_protocol::Decision::DenyAndStop { message: reason }
            } else {
                nucleic_protocol::Decision::Deny { message: reason }
            };
            decide(&mut daemon, session_id, request_id, decision, false).await?;
            None
        }
        SessionCommand::Answer { session_id, request, answers } => {
            let summary = crate::approvals::summary(&mut daemon, &session_id).await?;
            let open = crate::approvals::pending(&mut daemon, &summary).await?;
            let request_id = match request {
                Some(id) => id,
                None => crate::approvals::only(&open, &session_id)?,
            };
            let asked = open.iter().find(|a| a.request_id == request_id).with_context(|| {
                format!("session {session_id} has no pending request {request_id}")
            })?;
            let answers = crate::approvals::answers(asked, &answers)?;
            let decision = nucleic_protocol::Decision::Answer { answers };
            decide(&mut daemon, session_id, Some(request_id), decision, false).await?;
            None
        }
        SessionCommand::Interrupt { session_id } => {
            daemon.intent(Intent::Interrupt { session_id }).await?
        }
        SessionCommand::Stop { session_id } => daemon.intent(Intent::Stop { session_id }).await?,
        SessionCommand::Diff { session_id, patch, turn } => {
            return crate::review::session_diff(&mut daemon, session_id, turn, patch).await;
        }
        SessionCommand::Review { command } => {
            return crate::review::session_review(&mut daemon, command).await;
        }
        SessionCommand::Pr(args) => {
            let (session_id, action) = args.into_action();
            daemon.intent(finish(session_id, action)).await?
        }
        SessionCommand::Merge { session_id, message, update_checkout, force } => {
            let action = FinishAction::Merge { message, update_checkout, force_reason: force };
            daemon.intent(finish(session_id, action)).await?
        }
        SessionCommand::Squash { session_id, message, update_checkout, force } => {
            let action = FinishAction::Squash { message, update_checkout, force_reason: force };
            daemon.intent(finish(session_id, action)).await?
        }
        SessionCommand::Rebase { session_id, message, update_checkout, force } => {
            let action = FinishAction::Rebase { message, update_checkout, force_reason: force };
            daemon.intent(finish(session_id, action)).await?
        }
        SessionCommand::Check { session_id, name } => {
            return crate::checks::session_check(&mut daemon, session_id, name).await;
        }
        SessionCommand::Disk { session_id } => {
            return crate::disk::session_disk(&mut daemon, session_id).await;
        }
        SessionCommand::Reclaim { session_id } => {
            return crate::disk::session_reclaim(&mut daemon, session_id).await;
        }
        SessionCommand::Report { session_id, json } => {
            return crate::checks::session_report(&mut daemon, session_id, json).await;
        }
        SessionCommand::Discard { session_id } => {
            daemon.intent(finish(session_id, FinishAction::Discard)).await?
        }
        SessionCommand::Keep { session_id } => {
            daemon.intent(finish(session_id, FinishAction::Keep)).await?
        }
        SessionCommand::Rollback { session_id, yes } => {
            daemon.intent(finish(session_id, FinishAction::Rollback { confirm: yes })).await?
        }
        SessionCommand::Continue { session_id, agent, prompt } => {
            let action = FinishAction::Continue { prompt: prompt.join(" "), backend: agent };
            daemon.intent(finish(session_id, action)).await?
        }
        SessionCommand::Export { session_id, format, output } => {
            let format = match format {
                ExportFormatArg::Markdown => nucleic_protocol::ExportFormat::Markdown,
                ExportFormatArg::Jsonl => nucleic_protocol::ExportFormat::Jsonl,
            };
            let text = daemon.export_session(&session_id, format).await?;
            match output {
                Some(path) => {
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .mode(0o600)
                        .open(&path)?;
                    file.write_all(text.as_bytes())?;
                }
                None => print!("{text}"),
            }
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::Handoff { session_id } => {
            let intent = finish(session_id, FinishAction::Handoff);
            let handoff: nucleic_client::results::Handoff = daemon.intent_as(intent).await?;
            println!("{}", handoff.command);
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::Rename { session_id, title } => {
            daemon.intent(Intent::Rename { session_id, title }).await?
        }
        SessionCommand::Mode { session_id, mode } => {
            let changed: SessionUpdated =
                daemon.intent_as(Intent::SetMode { session_id, mode }).await?;
            println!("{} ({})", changed.mode.unwrap_or_default(), changed.note.unwrap_or_default());
            return Ok(ExitCode::SUCCESS);
        }
        SessionCommand::Archive { session_id, undo } => {
            daemon.intent(Intent::Archive { session_id, archived: !undo }).await?
        }
    };
    if let Some(result) = result {
        println!("{}", serde_json::to_string_pretty(&result.payload())?);
    }
    Ok(ExitCode::SUCCESS)
}

/// `nucleic import PATH`: a read-only session from a Claude transcript or a Nucleic export.
pub async fn import(home: &Path, path: &Path) -> anyhow::Result<ExitCode> {
    let path = std::fs::canonicalize(path)?;
    let mut daemon = crate::daemon::connect(home).await?;
    let summary: SessionSummary =
        daemon.intent_as(Intent::Import { path: path.to_string_lossy().into_owned() }).await?;
    print_session(&summary);
    Ok(ExitCode::SUCCESS)
}
