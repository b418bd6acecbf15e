//! What an MCP principal may ask: each request's scope (`observe`, `start`, `steer`, `approve`,
//! `finish`, or only the person), checked against the grant before anything is carried out, and the
//! limits on its answers — never a critical request (classified now when the session has no
//! policy), never one of its own
//! session or that session's ancestors, never a decision that widens what runs (an edited
//! input, "always", a plan's mode). Every refusal says why.

use nucleic_protocol::{
    ApprovalRequested, ClientMessage, Decision, EventKind, FinishAction, Intent, McpScope, Risk,
};

use super::answer::{McpPrincipal, Principal};
use crate::context::Context;
use crate::error::HostError;

/// How far up a session's parents are followed (a longer chain is refused as a loop).
const MAX_ANCESTORS: usize = 64;

/// What a request needs of an MCP principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Scope(McpScope),
    /// Only the person (the token or a signed-in device), never an MCP client.
    Person(&'static str),
}

fn need(message: &ClientMessage) -> Need {
    match message {
        ClientMessage::ListProjects { .. }
        | ClientMessage::ListSessions { .. }
        | ClientMessage::GitFacts { .. }
        | ClientMessage::ExportSession { .. }
        | ClientMessage::ListFiles { .. }
        | ClientMessage::ReadFile { .. }
        | ClientMessage::ListBranches { .. }
        | ClientMessage::Hello { .. }
        | ClientMessage::Subscribe { .. }
        | ClientMessage::Unsubscribe { .. } => Need::Scope(McpScope::Observe),
        ClientMessage::SendInput { .. } => Need::Scope(McpScope::Steer),
        ClientMessage::Decide { .. } => Need::Scope(McpScope::Approve),
        ClientMessage::Intent { intent, .. } => need_of(intent),
        ClientMessage::ListDevices { .. } => Need::Person("list devices"),
        ClientMessage::GetPush { .. } | ClientMessage::SetPush { .. } => {
            Need::Person("read or change push settings")
        }
    }
}

fn need_of(intent: &Intent) -> Need {
    match intent {
        Intent::ReviewComments { .. } | Intent::ListRules(_) => Need::Scope(McpScope::Observe),
        Intent::NewSession(_) => Need::Scope(McpScope::Start),
        Intent::Interrupt { .. } => Need::Scope(McpScope::Steer),
        // A file put where another session's agent reads it: a person's act (the chat bridge).
        Intent::Attach { .. } => Need::Person("attach a file to a session"),
        Intent::GrantMcp { .. } | Intent::RevokeMcp { .. } | Intent::ListMcpGrants => {
            Need::Person("grant, revoke or list MCP grants")
        }
        Intent::RevokeDevice { .. } | Intent::RotateToken | Intent::PairDevice { .. } => {
            Need::Person("manage devices or the token")
        }
        Intent::ReportChatBridge { .. }
        | Intent::ListChatBridges
        | Intent::UnpairChatPerson { .. } => Need::Person("manage chat bridges and their users"),
        Intent::AddRule { .. }
        | Intent::RemoveRule { .. }
        | Intent::SetMode { .. }
        | Intent::SetProjectMode { .. }
        | Intent::SetPermissionMode { .. }
        | Intent::SetProjectSandbox { .. } => {
            Need::Person("change the policy, a mode or the sandbox")
        }
        Intent::Finish { action, .. } => finish_need(action),
        Intent::AddProject { .. }
        | Intent::SetPoolSize { .. }
        | Intent::SetProjectChecks { .. }
        | Intent::RenameProject { .. }
        | Intent::RemoveProject { .. }
        | Intent::SetDiskPolicy { .. } => Need::Person("add, change or remove a project"),
        Intent::OutsideSessions { .. } | Intent::AdoptSession { .. } | Intent::Import { .. } => {
            Need::Person("read or adopt sessions made outside Nucleic")
        }
        Intent::RunChecks { .. }
        | Intent::Report { .. }
        | Intent::AddReviewComment { .. }
        | Intent::ResolveReviewComment { .. }
        | Intent::SendReview { .. }
        | Intent::Stop { .. }
        | Intent::SetModel { .. }
        | Intent::Rename { .. }
        | Intent::Archive { .. }
        | Intent::Gc { .. }
        | Intent::MeasureDisk { .. }
        | Intent::Reclaim { .. } => Need::Person("do this (not offered to MCP clients)"),
    }
}

/// What finishing a session with `action` needs: the `finish` scope for the ways that keep
/// the work (and pass the required checks); the person for the rest.
fn finish_need(action: &FinishAction) -> Need {
    match action {
        FinishAction::Merge { force_reason: Some(_), .. }
        | FinishAction::Squash { force_reason: Some(_), .. }
        | FinishAction::Rebase { force_reason: Some(_), .. }
        | FinishAction::PullRequest { force_reason: Some(_), .. } => {
            Need::Person("finish a session past its failing required checks (a forced finish)")
        }
        FinishAction::Keep
        | FinishAction::Merge { .. }
        | FinishAction::Squash { .. }
        | FinishAction::Rebase { .. }
        | FinishAction::PullRequest { .. } => Need::Scope(McpScope::Finish),
        FinishAction::Discard | FinishAction::Rollback { .. } => {
            Need::Person("discard or roll back a session's work")
        }
        FinishAction::Continue { .. } | FinishAction::Handoff => {
            Need::Person("continue or hand off a session")
        }
    }
}

fn forbidden(mcp: &McpPrincipal, why: impl std::fmt::Display) -> HostError {
    HostError::Forbidden(format!("MCP grant {}: {why}", mcp.name))
}

fn held(mcp: &McpPrincipal) -> String {
    mcp.scopes.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

impl Context {
    /// Refuses what `principal` may not ask (only an MCP principal is limited here).
    pub(crate) async fn authorize(
        &self,
        principal: &Principal,
        message: &ClientMessage,
    ) -> Result<(), HostError> {
        let Some(mcp) = principal.mcp() else { return Ok(()) };
        match need(message) {
            Need::Person(what) => {
                return Err(forbidden(
                    mcp,
                    format!(
                        "an MCP client may not {what}; only the person can (the token or a signed-in device)"
                    ),
                ));
            }
            Need::Scope(scope) if !mcp.scopes.contains(&scope) => {
                return Err(forbidden(
                    mcp,
                    format!(
                        "this needs the `{}` scope and the grant holds {}; only the person can widen it (`nucleic mcp grant` a new name)",
                        scope.name(),
                        held(mcp)
                    ),
                ));
            }
            Need::Scope(_) => {}
        }
        match message {
            ClientMessage::Decide { session_id, request_id, decision, .. } => {
                self.not_its_own(mcp, session_id, "answer").await?;
                self.check_mcp_decision(mcp, session_id, request_id, decision).await
            }
            ClientMessage::SendInput { session_id, .. } => {
                self.not_its_own(mcp, session_id, "steer").await
            }
            ClientMessage::Intent { intent: Intent::Interrupt { session_id }, .. } => {
                self.not_its_own(mcp, session_id, "steer").await
            }
            // An agent finishing its own work would be its own reviewer.
            ClientMessage::Intent { intent: Intent::Finish { session_id, .. }, .. } => {
                self.not_its_own(mcp, session_id, "finish").await
            }
            _ => Ok(()),
        }
    }

    /// Refuses `session_id` when it is the grant's own session or one of its ancestors.
    async fn not_its_own(
        &self,
        mcp: &McpPrincipal,
        session_id: &str,
        what: &str,
    ) -> Result<(), HostError> {
        let Some(own) = &mcp.session_id else { return Ok(()) };
        let lineage = self.lineage(own).await?;
        match lineage.iter().position(|s| s == session_id) {
            Some(0) => Err(forbidden(
                mcp,
                format!(
                    "it is the agent of session {session_id} and may not {what} its own session"
                ),
            )),
            Some(_) => Err(forbidden(
                mcp,
                format!(
                    "session {session_id} is an ancestor of its own session {own}; it may not {what} it"
                ),
            )),
            None => Ok(()),
        }
    }

    /// `session` and its ancestors (parent first), following `parentSessionID`.
    pub(crate) async fn lineage(&self, session: &str) -> Result<Vec<String>, HostError> {
        let mut chain = vec![session.to_owned()];
        while let Some(last) = chain.last().cloned() {
            let row = self.catalog(move |c| c.session(&last)).await?;
            let Some(parent) = row.and_then(|r| r.parent_session_id) else { break };
            if chain.contains(&parent) || chain.len() > MAX_ANCESTORS {
                return Err(HostError::Invalid(format!(
                    "session {session}'s parents loop or go deeper than {MAX_ANCESTORS}"
                )));
            }
            chain.push(parent);
        }
        Ok(chain)
    }

    /// An MCP principal's decision: only plain allow, an answer, or deny — and an allow only
    /// of a request the policy classified below critical.
    async fn check_mcp_decision(
        &self,
        mcp: &McpPrincipal,
        session_id: &str,
        request_id: &str,
        decision: &Decision,
    ) -> Result<(), HostError> {
        let allows = match decision {
            Decision::Allow | Decision::Answer { .. } => true,
            Decision::Deny { .. } | Decision::DenyAndStop { .. } => false,
            Decision::AllowEdited { .. } => {
                return Err(forbidden(
                    mcp,
                    "an MCP client may not allow a call with edited input (it would run what was never classified)",
                ));
            }
            Decision::AllowAlways { .. } => {
                return Err(forbidden(
                    mcp,
                    "an MCP client may not allow always (it would add a rule); allow once",
                ));
            }
            Decision::ApprovePlan { .. } => {
                return Err(forbidden(
                    mcp,
                    "an MCP client may not approve a plan (it switches the session's mode)",
                ));
            }
        };
        if !allows {
            return Ok(());
        }
        let Some(request) = self.pending_request(session_id, request_id).await? else {
            // Not pending: the writer answers why (already resolved, by whom; or unknown).
            return Ok(());
        };
        let (risk, reasons) = match request.risk {
            Some(risk) => (risk, request.risk_reasons.clone()),
            // A session without a policy (the simulated agent, NUCLEIC_POLICY=off): the
            // policy's classifier judges the call now, in the session's worktree.
            None => self.classify_now(session_id, &request).await?,
        };
        match risk {
            Risk::Critical => Err(forbidden(
                mcp,
                format!(
                    "request {request_id} is critical ({}); only a person may allow it, confirming twice",
                    reasons.join(", ")
                ),
            )),
            Risk::Low | Risk::Medium | Risk::High => Ok(()),
        }
    }

    /// The risk of an unclassified request, by the policy's classifier (no rules, `edit` mode)
    /// in the session's worktree.
    async fn classify_now(
        &self,
        session_id: &str,
        request: &ApprovalRequested,
    ) -> Result<(Risk, Vec<String>), HostError> {
        let row = self.session_row(session_id).await?;
        let worktree = std::path::PathBuf::from(
            row.worktree.as_ref().map_or(row.cwd.as_str(), |w| w.path.as_str()),
        );
        let project_root = match &row.project_id {
            Some(id) => std::path::PathBuf::from(self.project(id).await?.root),
            None => worktree.clone(),
        };
        let ctx = nucleic_policy::Context {
            project_root,
            cwd: worktree.clone(),
            worktree,
            home: crate::policy::session::agent_home(&self.config),
            data_dir: self.config.home.clone(),
            extra_write_roots: Vec::new(),
            read_roots: Vec::new(),
            mode: nucleic_policy::Mode::Edit,
            resolver: &nucleic_policy::FsResolver,
        };
        let verdict =
            nucleic_policy::Policy::new().evaluate(&request.tool_name, &request.input, &ctx);
        let risk = match verdict.risk {
            nucleic_policy::Risk::Low => Risk::Low,
            nucleic_policy::Risk::Medium => Risk::Medium,
            nucleic_policy::Risk::High => Risk::High,
            nucleic_policy::Risk::Critical => Risk::Critical,
        };
        Ok((risk, verdict.risk_reasons))
    }

    /// The pending request `request_id` of `session_id` as it was asked (read from the
    /// transcript at its seq), if it is pending.
    async fn pending_request(
        &self,
        session_id: &str,
        request_id: &str,
    ) -> Result<Option<ApprovalRequested>, HostError> {
        // Waits for the catalog to have folded what the writer wrote.
        let row = self.session_row(session_id).await?;
        let key = session_id.to_owned();
        let pending = self.catalog(move |c| c.pending_approvals(&key)).await?;
        let Some(approval) = pending.into_iter().find(|a| a.request_id == request_id) else {
            return Ok(None);
        };
        let path = std::path::PathBuf::from(row.transcript);
        let seq = approval.requested_seq;
        let read =
            crate::error::blocking(move || nucleic_store::read_range(&path, 0, seq, 1)).await?;
        Ok(read.events.into_iter().find(|e| e.seq == seq).and_then(|e| match e.kind {
            EventKind::ApprovalRequested(request) if request.request_id == request_id => {
                Some(request)
            }
            _ => None,
        }))
    }
}
