//! The intent router: each `Intent` a client sends, to the part that carries it out, and the
//! result the client gets back.

use nucleic_protocol::{
    CheckTrigger, ChecksRun, Intent, IntentResult, ProjectMode, ReviewComments, ReviewSendout,
    RuleAdded, RuleRemoved, TokenRotated,
};

use crate::context::Context;
use crate::error::HostError;
use crate::sessions::outside::AdoptOutside;

impl Context {
    /// Carries out an intent from a client named `by`.
    pub async fn intent(
        &self,
        intent: Intent,
        by: &str,
    ) -> Result<Option<IntentResult>, HostError> {
        match intent {
            Intent::AddProject {
                path,
                name,
                setup_script,
                copy_files,
                default_backend,
                pool_size,
                checks,
                checks_after_turn,
            } => {
                let project = self
                    .add_project(&path, name, move |s| {
                        s.setup_script = setup_script;
                        s.copy_files = copy_files;
                        s.checks = checks;
                        s.checks_after_turn = checks_after_turn;
                        if let Some(b) = default_backend {
                            s.default_backend = b;
                        }
                        if let Some(size) = pool_size {
                            s.pool_size = size;
                        }
                    })
                    .await?;
                Ok(Some(IntentResult::Project(project)))
            }
            Intent::SetProjectSandbox { project_id, sandbox } => {
                Ok(Some(IntentResult::Project(self.set_project_sandbox(&project_id, sandbox).await?)))
            }
            Intent::SetDiskPolicy { project_id, policy } => {
                Ok(Some(IntentResult::Project(self.set_disk_policy(&project_id, policy).await?)))
            }
            Intent::MeasureDisk { session_id } => {
                Ok(Some(IntentResult::DiskUsage(self.measure_disk(&session_id).await?)))
            }
            Intent::Reclaim { session_id } => {
                let reclaimed =
                    self.reclaim(&session_id, crate::worktrees::disk::ReclaimReason::Request, by).await?;
                Ok(Some(IntentResult::Reclaimed(reclaimed)))
            }
            Intent::SetPoolSize { project_id, size } => {
                Ok(Some(IntentResult::Project(self.set_pool_size(&project_id, size).await?)))
            }
            Intent::SetProjectChecks { project_id, checks, checks_after_turn } => {
                let project = self.set_project_checks(&project_id, checks, checks_after_turn).await?;
                Ok(Some(IntentResult::Project(project)))
            }
            Intent::RunChecks { session_id, name } => {
                let checks =
                    self.run_checks(&session_id, name.as_deref(), CheckTrigger::Request).await?;
                Ok(Some(IntentResult::ChecksRun(ChecksRun { checks })))
            }
            Intent::Report { session_id } => {
                Ok(Some(IntentResult::Report(self.report(&session_id, CheckTrigger::Request).await?)))
            }
            Intent::AddReviewComment { session_id, path, line, end_line, body, snapshot } => {
                let new = crate::dev_loop::review::NewComment { path, line, end_line, body, snapshot };
                Ok(Some(IntentResult::ReviewComment(self.add_review_comment(&session_id, new, by).await?)))
            }
            Intent::ResolveReviewComment { session_id, comment_id, resolved } => {
                let comment =
                    self.resolve_review_comment(&session_id, &comment_id, resolved).await?;
                Ok(Some(IntentResult::ReviewComment(comment)))
            }
            Intent::ReviewComments { session_id } => {
                let comments = self.review_comments(&session_id).await?;
                Ok(Some(IntentResult::ReviewComments(ReviewComments { comments })))
            }
            Intent::SendReview { session_id } => {
                let (sent, prompt) = self.send_review(&session_id, by).await?;
                let sent = u64::try_from(sent).unwrap_or(u64::MAX);
                Ok(Some(IntentResult::ReviewSendout(ReviewSendout { sent, prompt })))
            }
            Intent::RenameProject { project_id, name } => {
                self.rename_project(&project_id, &name).await.map(|()| None)
            }
            Intent::RemoveProject { project_id } => {
                self.remove_project(&project_id).await.map(|()| None)
            }
            Intent::NewSession(request) => Ok(Some(IntentResult::Session(self.new_session(request, by).await?))),
            Intent::Attach { session_id, name, content, append } => {
                let attached = self.attach(&session_id, &name, &content, append.as_deref()).await?;
                Ok(Some(IntentResult::Attached(attached)))
            }
            Intent::Interrupt { session_id } => {
                self.interrupt(&session_id, by).await.map(|()| None)
            }
            Intent::Stop { session_id } => {
                self.checks.stop(&session_id);
                self.stop(&session_id).await.map(|()| None)
            }
            Intent::SetModel { session_id, model } => {
                self.set_model(&session_id, &model).await.map(|()| None)
            }
            Intent::SetPermissionMode { session_id, mode } => {
                self.set_permission_mode(&session_id, &mode).await.map(|()| None)
            }
            Intent::SetMode { session_id, mode } => {
                Ok(Some(IntentResult::SessionUpdated(self.set_session_mode(&session_id, &mode, by).await?)))
            }
            Intent::SetProjectMode { project_id, mode } => {
                let mode = self.set_project_mode(&project_id, mode.as_deref()).await?;
                let mode = mode.as_str().to_owned();
                Ok(Some(IntentResult::ProjectMode(ProjectMode { project_id, mode })))
            }
            Intent::ListRules(target) => Ok(Some(IntentResult::Rules(self.list_rules(&target).await?))),
            Intent::AddRule { session_id, project_id, scope, behaviour, rule } => {
                let target = nucleic_protocol::RulesTarget { session_id, project_id };
                let added = self.add_rule(&target, scope, behaviour, &rule).await?;
                Ok(Some(IntentResult::RuleAdded(RuleAdded { added })))
            }
            Intent::RemoveRule { session_id, project_id, scope, rule } => {
                let target = nucleic_protocol::RulesTarget { session_id, project_id };
                let removed = self.remove_rule(&target, scope, &rule).await?;
                let removed = u64::try_from(removed).unwrap_or(u64::MAX);
                Ok(Some(IntentResult::RuleRemoved(RuleRemoved { removed })))
            }
            Intent::Rename { session_id, title } => {
                self.rename(&session_id, &title, by).await.map(|()| None)
            }
            Intent::Archive { session_id, archived } => {
                self.archive(&session_id, archived, by).await.map(|()| None)
            }
            Intent::Finish { session_id, action } => {
                let ends = !matches!(action, nucleic_protocol::FinishAction::Handoff);
                let result = self.finish(&session_id, action, by).await?;
                // The task is over: the files a chat attached to it go (a handoff goes on).
                if ends {
                    crate::sessions::attachments::remove(&self.config, &session_id);
                }
                Ok(result)
            }
            Intent::Import { path } => {
                let session = self.import_session(std::path::Path::new(&path)).await?;
                Ok(Some(IntentResult::Session(session)))
            }
            Intent::OutsideSessions { project_id } => {
                let found = self.outside_sessions(&project_id).await?;
                Ok(Some(IntentResult::OutsideSessions(crate::sessions::outside::on_the_wire(found))))
            }
            Intent::AdoptSession { project_id, session, prompt, mode, in_place } => {
                let request = AdoptOutside { project_id, session, prompt, mode, in_place };
                let session = self.adopt_outside(request, by).await?;
                Ok(Some(IntentResult::Session(session)))
            }
            Intent::Gc { apply } => self.gc(apply).await.map(|gc| Some(IntentResult::Gc(gc))),
            Intent::RevokeDevice { device_id } => {
                self.revoke_device(&device_id).await.map(|()| None)
            }
            Intent::RotateToken => {
                let revoked = self.rotate_token().await?;
                let devices_revoked = u64::try_from(revoked).unwrap_or(u64::MAX);
                Ok(Some(IntentResult::TokenRotated(TokenRotated { devices_revoked })))
            }
            Intent::PairDevice { .. } => Err(HostError::Invalid(
                "pairing is opened by the daemon's server over its WebSocket (`nucleic serve --relay URL`, then `nucleic pair`)".into(),
            )),
            Intent::GrantMcp { name, scopes, session_id, project_ids } => {
                let granted = self.grant_mcp(&name, &scopes, session_id, project_ids).await?;
                Ok(Some(IntentResult::McpGranted(granted)))
            }
            Intent::RevokeMcp { name } => {
                self.revoke_mcp(&name).await?;
                Ok(Some(IntentResult::McpGrants(self.list_mcp_grants().await?)))
            }
            Intent::ListMcpGrants => Ok(Some(IntentResult::McpGrants(self.list_mcp_grants().await?))),
            Intent::ReportChatBridge { report } => {
                Ok(Some(IntentResult::ChatBridgeReported(self.report_chat_bridge(report)?)))
            }
            Intent::ListChatBridges => Ok(Some(IntentResult::ChatBridges(self.list_chat_bridges()))),
            Intent::UnpairChatPerson { person } => {
                Ok(Some(IntentResult::ChatBridges(self.unpair_chat_person(&person)?)))
            }
        }
    }

    /// Carries out an intent from `principal`, already authorized: a session an MCP client
    /// starts records its grant's session as its parent.
    pub(crate) async fn intent_of(
        &self,
        intent: Intent,
        principal: &crate::api::Principal,
    ) -> Result<Option<IntentResult>, HostError> {
        use crate::api::Principal;
        match (&intent, principal) {
            // The bridge's own connection reports; not a chat user acting through it, a
            // device or an MCP client.
            (Intent::ReportChatBridge { .. }, Principal::Token) => {}
            (Intent::ReportChatBridge { .. }, _) => {
                return Err(HostError::Forbidden(
                    "only a chat bridge on the host's own machine reports itself (the host's token, not acting for anyone)".into(),
                ));
            }
            (
                Intent::ListChatBridges | Intent::UnpairChatPerson { .. },
                Principal::OnBehalf { .. } | Principal::Mcp(_),
            ) => {
                return Err(HostError::Forbidden(
                    "only the person lists chat bridges or unpairs their users (the token or a device)".into(),
                ));
            }
            _ => {}
        }
        match (intent, principal.mcp()) {
            (Intent::NewSession(request), Some(mcp)) => {
                let parent = mcp.session_id.clone();
                let session = self.new_session_with_parent(request, &mcp.label, parent).await?;
                Ok(Some(IntentResult::Session(session)))
            }
            (intent, _) => self.intent(intent, principal.label()).await,
        }
    }
}
