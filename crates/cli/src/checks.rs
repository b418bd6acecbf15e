//! `nucleic project check …`, `nucleic session check` and `nucleic session report`: a project's
//! checks, running them in a session's worktree, and the report of claims next to facts.

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use nucleic_protocol::{
    CheckFinished, CheckSpec, ClientMessage, HostMessage, Intent, ProjectSummary, Report,
};

use nucleic_client::Client;
use nucleic_client::results::ChecksRun;

#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// Add (or replace) a check, run without a shell:
    /// `nucleic project check add P tests --timeout 300 -- cargo test`.
    Add {
        project_id: String,
        name: String,
        /// Seconds before the check's whole process tree is killed.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// A host environment variable to pass on (besides PATH, HOME, the locale); repeatable.
        #[arg(long = "env")]
        env: Vec<String>,
        /// A failure of this check does not refuse merging.
        #[arg(long)]
        optional: bool,
        /// The program and its arguments, after `--`.
        #[arg(last = true, required = true, num_args = 1..)]
        argv: Vec<String>,
    },
    /// Remove a check.
    Rm { project_id: String, name: String },
    /// List a project's checks.
    List { project_id: String },
    /// Run the checks, then the report, after every turn of the project's sessions (`on`/`off`).
    AfterTurn {
        project_id: String,
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

async fn project(daemon: &mut Client, id: &str) -> anyhow::Result<ProjectSummary> {
    let message_id = daemon.id();
    let HostMessage::Projects { projects, .. } =
        daemon.request(ClientMessage::ListProjects { message_id }).await?
    else {
        bail!("the daemon sent no project list")
    };
    projects.into_iter().find(|p| p.project_id == id).with_context(|| format!("no project {id}"))
}

fn print_check(c: &CheckSpec) {
    let flags = format!(
        "{}{}",
        if c.required { "" } else { " (optional)" },
        if c.env.is_empty() { String::new() } else { format!(" env: {}", c.env.join(",")) }
    );
    println!("{}  timeout {} s{flags}  {}", c.name, c.timeout_secs, c.argv.join(" "));
}

pub async fn project_check(daemon: &mut Client, command: CheckCommand) -> anyhow::Result<()> {
    let (project_id, checks, after_turn) = match command {
        CheckCommand::List { project_id } => {
            let p = project(daemon, &project_id).await?;
            println!("after every turn: {}", if p.checks_after_turn { "on" } else { "off" });
            p.checks.iter().for_each(print_check);
            return Ok(());
        }
        CheckCommand::Add { project_id, name, timeout, env, optional, argv } => {
            let mut checks = project(daemon, &project_id).await?.checks;
            let spec = CheckSpec { name, argv, timeout_secs: timeout, env, required: !optional };
            match checks.iter_mut().find(|c| c.name == spec.name) {
                Some(slot) => *slot = spec,
                None => checks.push(spec),
            }
            (project_id, checks, None)
        }
        CheckCommand::Rm { project_id, name } => {
            let mut checks = project(daemon, &project_id).await?.checks;
            let before = checks.len();
            checks.retain(|c| c.name != name);
            if checks.len() == before {
                bail!("project {project_id} has no check {name:?}");
            }
            (project_id, checks, None)
        }
        CheckCommand::AfterTurn { project_id, state } => {
            let checks = project(daemon, &project_id).await?.checks;
            (project_id, checks, Some(state == "on"))
        }
    };
    let set = Intent::SetProjectChecks { project_id, checks, checks_after_turn: after_turn };
    let p: ProjectSummary = daemon.intent_as(set).await?;
    p.checks.iter().for_each(print_check);
    Ok(())
}

/// `nucleic session check ID [NAME]`: runs them now; fails when one does.
pub async fn session_check(
    daemon: &mut Client,
    session_id: String,
    name: Option<String>,
) -> anyhow::Result<ExitCode> {
    let run: ChecksRun = daemon.intent_as(Intent::RunChecks { session_id, name }).await?;
    let checks = run.checks;
    for c in &checks {
        println!("{}", c.summary());
        if let Some(log) = &c.log_path {
            println!("  log: {log}");
        }
    }
    Ok(if checks.iter().all(CheckFinished::is_pass) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `nucleic session report ID [--json]`: records and prints the report.
pub async fn session_report(
    daemon: &mut Client,
    session_id: String,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let report: Report = daemon.intent_as(Intent::Report { session_id }).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", report.render());
    Ok(ExitCode::SUCCESS)
}
