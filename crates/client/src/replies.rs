//! Which reply answers which request, and how long a request may wait for it.

use std::time::Duration;

use nucleic_protocol::{ClientMessage, HostMessage, Intent};

use crate::client::ClientOptions;

/// The `messageID` a reply answers, if it is a reply.
pub fn reply_id(message: &HostMessage) -> Option<&str> {
    match message {
        HostMessage::Ack { message_id, .. }
        | HostMessage::Projects { message_id, .. }
        | HostMessage::Sessions { message_id, .. }
        | HostMessage::GitFacts { message_id, .. }
        | HostMessage::Files { message_id, .. }
        | HostMessage::Branches { message_id, .. }
        | HostMessage::Devices { message_id, .. }
        | HostMessage::Push { message_id, .. }
        | HostMessage::FileContent { message_id, .. } => Some(message_id),
        HostMessage::Error { message_id, .. } | HostMessage::Unsupported { message_id, .. } => {
            message_id.as_deref()
        }
        HostMessage::Welcome { .. }
        | HostMessage::Event { .. }
        | HostMessage::Events { .. }
        | HostMessage::SessionChanged { .. } => None,
    }
}

/// A host message's `type`.
pub(crate) fn message_type(message: &HostMessage) -> String {
    serde_json::to_value(message)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str().map(str::to_owned)))
        .unwrap_or_default()
}

/// How long a reply to `message` may take.
pub(crate) fn reply_within(options: &ClientOptions, message: &ClientMessage) -> Duration {
    let long = match message {
        ClientMessage::Intent { intent, .. } => takes_long(intent),
        ClientMessage::Hello { .. }
        | ClientMessage::ListProjects { .. }
        | ClientMessage::ListSessions { .. }
        | ClientMessage::Subscribe { .. }
        | ClientMessage::Unsubscribe { .. }
        | ClientMessage::GitFacts { .. }
        | ClientMessage::ExportSession { .. }
        | ClientMessage::SendInput { .. }
        | ClientMessage::Decide { .. }
        | ClientMessage::ListFiles { .. }
        | ClientMessage::ReadFile { .. }
        | ClientMessage::ListBranches { .. }
        | ClientMessage::ListDevices { .. }
        | ClientMessage::GetPush { .. }
        | ClientMessage::SetPush { .. } => false,
    };
    if long { options.long_reply_within } else { options.reply_within }
}

/// Intents whose reply waits on checks, setup scripts, `gh` or disk walks.
fn takes_long(intent: &Intent) -> bool {
    match intent {
        Intent::NewSession(_)
        | Intent::Finish { .. }
        | Intent::RunChecks { .. }
        | Intent::Import { .. }
        // A search of the CLIs' folders (a 3 s deadline); a worktree and an agent's start.
        | Intent::OutsideSessions { .. }
        | Intent::AdoptSession { .. }
        | Intent::Gc { .. }
        | Intent::MeasureDisk { .. }
        | Intent::Reclaim { .. }
        | Intent::AddProject { .. }
        // A switch across `readonly` stops an idle agent and waits for its end.
        | Intent::SetMode { .. } => true,
        Intent::SetPoolSize { .. }
        | Intent::SetProjectChecks { .. }
        | Intent::Report { .. }
        | Intent::AddReviewComment { .. }
        | Intent::ResolveReviewComment { .. }
        | Intent::ReviewComments { .. }
        | Intent::SendReview { .. }
        | Intent::RenameProject { .. }
        | Intent::RemoveProject { .. }
        | Intent::Attach { .. }
        | Intent::Interrupt { .. }
        | Intent::Stop { .. }
        | Intent::SetModel { .. }
        | Intent::SetPermissionMode { .. }
        | Intent::SetProjectMode { .. }
        | Intent::SetProjectSandbox { .. }
        | Intent::ListRules(_)
        | Intent::AddRule { .. }
        | Intent::RemoveRule { .. }
        | Intent::Rename { .. }
        | Intent::Archive { .. }
        | Intent::SetDiskPolicy { .. }
        | Intent::RevokeDevice { .. }
        | Intent::RotateToken
        | Intent::PairDevice { .. }
        | Intent::GrantMcp { .. }
        | Intent::RevokeMcp { .. }
        | Intent::ListMcpGrants
        | Intent::ReportChatBridge { .. }
        | Intent::ListChatBridges
        | Intent::UnpairChatPerson { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_intents_get_the_long_deadline() {
        let options = ClientOptions::new("t", "test");
        let checks = ClientMessage::Intent {
            message_id: "m1".into(),
            intent: Intent::RunChecks { session_id: "s".into(), name: None },
        };
        assert_eq!(reply_within(&options, &checks), options.long_reply_within);
        let list = ClientMessage::ListProjects { message_id: "m2".into() };
        assert_eq!(reply_within(&options, &list), options.reply_within);
    }
}
