//! `nucleic project sandbox`: what a project's agents see beyond the default confinement —
//! paths exposed read-only or writable, paths hidden, egress destinations allowed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use nucleic_client::Client;
use nucleic_protocol::{ClientMessage, HostMessage, Intent, ProjectSandbox};

/// What to change (each added to what is set; `clear` starts from nothing).
#[derive(Debug, Default)]
pub struct SandboxChange {
    pub read_only: Vec<PathBuf>,
    pub writable: Vec<PathBuf>,
    pub hide: Vec<PathBuf>,
    pub allow_domains: Vec<String>,
    pub clear: bool,
}

impl SandboxChange {
    fn is_empty(&self) -> bool {
        !self.clear
            && self.read_only.is_empty()
            && self.writable.is_empty()
            && self.hide.is_empty()
            && self.allow_domains.is_empty()
    }
}

/// Sets the project's sandbox when asked (the host checks every entry and refuses the whole
/// change, saying why), then shows it.
pub async fn project_sandbox(
    daemon: &mut Client,
    project_id: String,
    change: SandboxChange,
) -> anyhow::Result<ExitCode> {
    let message_id = daemon.id();
    let HostMessage::Projects { projects, .. } =
        daemon.request(ClientMessage::ListProjects { message_id }).await?
    else {
        bail!("the daemon did not list its projects");
    };
    let Some(project) = projects.into_iter().find(|p| p.project_id == project_id) else {
        bail!("project {project_id} not found");
    };
    let mut sandbox =
        if change.clear { ProjectSandbox::default() } else { project.sandbox.clone() };
    if !change.is_empty() {
        let absolute = |paths: &[PathBuf]| -> anyhow::Result<Vec<String>> {
            paths
                .iter()
                .map(|p| Ok(std::path::absolute(p)?.to_string_lossy().into_owned()))
                .collect()
        };
        sandbox.read_only.extend(absolute(&change.read_only)?);
        sandbox.writable.extend(absolute(&change.writable)?);
        sandbox.hide.extend(absolute(&change.hide)?);
        sandbox.allow_domains.extend(change.allow_domains);
        let set: nucleic_protocol::ProjectSummary = daemon
            .intent_as(Intent::SetProjectSandbox { project_id: project_id.clone(), sandbox })
            .await?;
        sandbox = set.sandbox;
        println!("applies at each agent's next start");
    }
    let list =
        |items: &[String]| if items.is_empty() { "none".to_owned() } else { items.join(", ") };
    println!("read-only: {}", list(&sandbox.read_only));
    println!("writable: {}", list(&sandbox.writable));
    println!("hidden: {}", list(&sandbox.hide));
    println!("egress also to: {}", list(&sandbox.allow_domains));
    Ok(ExitCode::SUCCESS)
}
