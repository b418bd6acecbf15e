//! An MCP grant limited to some projects: what each request is about (a session, a project, or
//! nothing), refused when that is outside the grant's projects, and the lists and session
//! changes it sees filtered to them — a session of another project is neither shown nor
//! touched, and the refusal says which project the grant covers.

use nucleic_protocol::{ClientMessage, Intent, ProjectSummary, SessionSummary};

use super::answer::{McpPrincipal, Principal};
use crate::context::Context;
use crate::error::HostError;

/// What a request acts on, as far as a grant's projects go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum About<'a> {
    Session(&'a str),
    Project(&'a str),
    /// Every project at once (the rules of all of them).
    AllProjects,
    /// A list (filtered instead) or a request only the person may make (refused before).
    Nothing,
}

fn about(message: &ClientMessage) -> About<'_> {
    match message {
        ClientMessage::GitFacts { session_id, .. }
        | ClientMessage::ExportSession { session_id, .. }
        | ClientMessage::ListFiles { session_id, .. }
        | ClientMessage::ReadFile { session_id, .. }
        | ClientMessage::SendInput { session_id, .. }
        | ClientMessage::Decide { session_id, .. }
        | ClientMessage::Subscribe { session_id, .. }
        | ClientMessage::Unsubscribe { session_id, .. } => About::Session(session_id),
        ClientMessage::ListBranches { project_id, .. } => About::Project(project_id),
        ClientMessage::ListSessions { project_id: Some(project_id), .. } => {
            About::Project(project_id)
        }
        ClientMessage::Intent { intent, .. } => about_intent(intent),
        ClientMessage::ListProjects { .. }
        | ClientMessage::ListSessions { project_id: None, .. }
        | ClientMessage::Hello { .. }
        | ClientMessage::ListDevices { .. }
        | ClientMessage::GetPush { .. }
        | ClientMessage::SetPush { .. } => About::Nothing,
    }
}

fn about_intent(intent: &Intent) -> About<'_> {
    match intent {
        Intent::ReviewComments { session_id }
        | Intent::Interrupt { session_id }
        | Intent::Finish { session_id, .. } => About::Session(session_id),
        Intent::NewSession(new) => About::Project(&new.project_id),
        Intent::ListRules(target) => match (&target.session_id, &target.project_id) {
            (Some(session), _) => About::Session(session),
            (None, Some(project)) => About::Project(project),
            (None, None) => About::AllProjects,
        },
        // Only the person may ask these (`scopes::need_of`): refused before this is asked.
        Intent::AddProject { .. }
        | Intent::SetPoolSize { .. }
        | Intent::SetProjectChecks { .. }
        | Intent::RunChecks { .. }
        | Intent::Report { .. }
        | Intent::AddReviewComment { .. }
        | Intent::ResolveReviewComment { .. }
        | Intent::SendReview { .. }
        | Intent::RenameProject { .. }
        | Intent::RemoveProject { .. }
        | Intent::Attach { .. }
        | Intent::Stop { .. }
        | Intent::SetModel { .. }
        | Intent::SetPermissionMode { .. }
        | Intent::SetMode { .. }
        | Intent::SetProjectMode { .. }
        | Intent::AddRule { .. }
        | Intent::RemoveRule { .. }
        | Intent::Rename { .. }
        | Intent::Archive { .. }
        | Intent::Import { .. }
        | Intent::OutsideSessions { .. }
        | Intent::AdoptSession { .. }
        | Intent::Gc { .. }
        | Intent::SetDiskPolicy { .. }
        | Intent::SetProjectSandbox { .. }
        | Intent::MeasureDisk { .. }
        | Intent::Reclaim { .. }
        | Intent::RevokeDevice { .. }
        | Intent::RotateToken
        | Intent::PairDevice { .. }
        | Intent::GrantMcp { .. }
        | Intent::RevokeMcp { .. }
        | Intent::ListMcpGrants
        | Intent::ReportChatBridge { .. }
        | Intent::ListChatBridges
        | Intent::UnpairChatPerson { .. } => About::Nothing,
    }
}

fn outside(mcp: &McpPrincipal, what: &str) -> HostError {
    let covered = mcp.project_ids.as_deref().unwrap_or_default().join(", ");
    HostError::Forbidden(format!(
        "MCP grant {}: {what}; it covers project {covered} only, and only the person can widen it (`nucleic mcp grant` a new name)",
        mcp.name
    ))
}

impl McpPrincipal {
    /// Whether the grant covers `project_id` (a session without a project: only a grant of
    /// every project).
    pub fn covers(&self, project_id: Option<&str>) -> bool {
        match (&self.project_ids, project_id) {
            (None, _) => true,
            (Some(ids), Some(id)) => ids.iter().any(|p| p == id),
            (Some(_), None) => false,
        }
    }
}

impl Principal {
    /// Whether this principal may see session changes of a session in `project_id`.
    pub fn sees_project(&self, project_id: Option<&str>) -> bool {
        self.mcp().is_none_or(|mcp| mcp.covers(project_id))
    }

    /// `projects` without those this principal may not see.
    pub fn visible_projects(&self, mut projects: Vec<ProjectSummary>) -> Vec<ProjectSummary> {
        projects.retain(|p| self.sees_project(Some(&p.project_id)));
        projects
    }

    /// `sessions` without those of projects this principal may not see.
    pub fn visible_sessions(&self, mut sessions: Vec<SessionSummary>) -> Vec<SessionSummary> {
        sessions.retain(|s| self.sees_project(s.project_id.as_deref()));
        sessions
    }
}

impl Context {
    /// Refuses a request of a grant limited to some projects about a session or project
    /// outside them (or a session that does not exist).
    pub(crate) async fn within_projects(
        &self,
        mcp: &McpPrincipal,
        message: &ClientMessage,
    ) -> Result<(), HostError> {
        if mcp.project_ids.is_none() {
            return Ok(());
        }
        match about(message) {
            About::Nothing => Ok(()),
            About::Project(project) if mcp.covers(Some(project)) => Ok(()),
            About::AllProjects => Err(outside(mcp, "every project was asked for")),
            About::Project(project) => {
                Err(outside(mcp, &format!("project {project} is not one it covers")))
            }
            About::Session(session) => {
                let key = session.to_owned();
                let row = self.catalog(move |c| c.session(&key)).await?;
                if row.is_some_and(|r| mcp.covers(r.project_id.as_deref())) {
                    return Ok(());
                }
                // An unknown session is refused alike: whether another project's session
                // exists is not the grant's to learn.
                Err(outside(mcp, &format!("session {session} is not in a project it covers")))
            }
        }
    }

    /// [`Context::within_projects`] for a subscription the server makes itself.
    pub async fn may_follow(
        &self,
        principal: &Principal,
        session_id: &str,
    ) -> Result<(), HostError> {
        let Some(mcp) = principal.mcp() else { return Ok(()) };
        let about = ClientMessage::Unsubscribe {
            message_id: String::new(),
            session_id: session_id.to_owned(),
        };
        self.within_projects(mcp, &about).await
    }
}
