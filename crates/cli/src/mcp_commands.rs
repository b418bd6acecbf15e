//! `nucleic mcp`: the MCP server on stdio, authenticated as an MCP grant (its credential from
//! `$NUCLEIC_MCP_CREDENTIAL`, never the home's token), and `nucleic mcp grant|revoke|list`, the
//! person's side: which MCP clients may do what (docs/mcp.md, docs/security.md).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Subcommand;
use nucleic_protocol::{Intent, IntentResult, McpGrantSummary, McpScope};

/// The variable `nucleic mcp` reads its credential from.
pub const CREDENTIAL_VARIABLE: &str = "NUCLEIC_MCP_CREDENTIAL";

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Grant an MCP client (by a name of your choosing) scopes, and print its credential once:
    /// `observe` always; `start` sessions, `steer` them (follow-ups, interrupts), `approve`
    /// their requests (never critical ones, never its own session's or its ancestors').
    Grant {
        name: String,
        /// Comma-separated: observe, start, steer, approve, finish.
        #[arg(long, value_delimiter = ',')]
        scope: Vec<String>,
        /// The session whose agent the client is (it may never answer that session's or its
        /// ancestors' requests; sessions it starts are recorded as that session's children).
        #[arg(long)]
        session: Option<String>,
        /// Only these projects (names or ids; repeat or comma-separate): the client neither
        /// sees nor acts on another project's sessions. Default: every project.
        #[arg(long, value_delimiter = ',')]
        project: Vec<String>,
    },
    /// Revoke a grant: its connections close at once, its credential never works again.
    Revoke { name: String },
    /// Every grant, revoked ones included.
    List,
}

/// `nucleic mcp` without a command: serve on stdio as the grant whose credential is in
/// `$NUCLEIC_MCP_CREDENTIAL`.
pub async fn serve(home: &Path) -> anyhow::Result<ExitCode> {
    let Some(credential) = std::env::var(CREDENTIAL_VARIABLE).ok().filter(|c| !c.trim().is_empty())
    else {
        bail!(
            "nucleic mcp needs a grant: run `nucleic mcp grant NAME --scope observe` (add start, steer, approve, finish as you choose) and give the MCP client its credential as {CREDENTIAL_VARIABLE} (docs/mcp.md)"
        );
    };
    let client = crate::daemon::connect_with_credential(home, &credential).await?;
    nucleic_mcp::serve_stdio(client).await?;
    Ok(ExitCode::SUCCESS)
}

fn scopes(names: &[String]) -> anyhow::Result<Vec<McpScope>> {
    names
        .iter()
        .filter(|n| !n.trim().is_empty())
        .map(|n| {
            McpScope::parse(n).with_context(|| {
                format!(
                    "unknown scope {n:?}: the scopes are observe, start, steer, approve, finish"
                )
            })
        })
        .collect()
}

fn line(grant: &McpGrantSummary) -> String {
    let scopes = grant.scopes.iter().map(|s| s.name()).collect::<Vec<_>>().join(",");
    let session =
        grant.session_id.as_deref().map(|s| format!("  agent of {s}")).unwrap_or_default();
    let projects = match &grant.project_ids {
        Some(ids) => format!("  projects {}", ids.join(",")),
        None => String::new(),
    };
    let state = if grant.revoked_at.is_some() { "  REVOKED" } else { "" };
    format!("{:<24}  {scopes}{session}{projects}{state}", grant.name)
}

/// The ids of `named` (names or ids), as the host knows them: a grant keeps ids, which a
/// rename does not change.
async fn project_ids(
    daemon: &mut nucleic_client::Client,
    named: &[String],
) -> anyhow::Result<Option<Vec<String>>> {
    let named: Vec<&str> = named.iter().map(|n| n.trim()).filter(|n| !n.is_empty()).collect();
    if named.is_empty() {
        return Ok(None);
    }
    let projects = daemon.list_projects().await?;
    let ids = named
        .iter()
        .map(|n| {
            projects
                .iter()
                .find(|p| p.project_id == *n || p.name == *n)
                .map(|p| p.project_id.clone())
                .with_context(|| format!("no project {n:?} (`nucleic project list`)"))
        })
        .collect::<anyhow::Result<Vec<String>>>()?;
    Ok(Some(ids))
}

pub async fn command(home: &Path, command: McpCommand) -> anyhow::Result<ExitCode> {
    let mut daemon = crate::daemon::connect(home).await?;
    let result = match command {
        McpCommand::Grant { name, scope, session, project } => {
            let project_ids = project_ids(&mut daemon, &project).await?;
            let intent = Intent::GrantMcp {
                name,
                scopes: scopes(&scope)?,
                session_id: session,
                project_ids,
            };
            match daemon.intent(intent).await? {
                Some(IntentResult::McpGranted(granted)) => {
                    println!("granted {}", line(&granted.grant));
                    println!("credential (shown once; keep it like a password):");
                    println!("{}", granted.credential);
                    println!();
                    println!(
                        "Claude Code:  claude mcp add nucleic -e {CREDENTIAL_VARIABLE}={} -- nucleic mcp",
                        granted.credential
                    );
                    return Ok(ExitCode::SUCCESS);
                }
                other => other,
            }
        }
        McpCommand::Revoke { name } => daemon.intent(Intent::RevokeMcp { name }).await?,
        McpCommand::List => daemon.intent(Intent::ListMcpGrants).await?,
    };
    match result {
        Some(IntentResult::McpGrants(list)) => {
            if list.grants.is_empty() {
                println!("no MCP grants (`nucleic mcp grant NAME --scope …` makes one)");
            }
            list.grants.iter().for_each(|g| println!("{}", line(g)));
            Ok(ExitCode::SUCCESS)
        }
        other => bail!("unexpected answer: {other:?}"),
    }
}
