//! The status state machine: which event moves a session to which status.

use nucleic_protocol::{EventKind, SessionStatus};

/// The status after `kind`, given the current one and how many approvals remain pending after it.
pub fn next_status(current: SessionStatus, kind: &EventKind, pending: usize) -> SessionStatus {
    if current.is_terminal() {
        return current;
    }
    match kind {
        EventKind::UserText(_) => SessionStatus::Running,
        EventKind::ApprovalRequested(a) if a.tool_name == "AskUserQuestion" => {
            SessionStatus::AwaitingInput
        }
        EventKind::ApprovalRequested(_) => SessionStatus::AwaitingApproval,
        EventKind::ApprovalResolved(_) if pending == 0 => match current {
            SessionStatus::AwaitingApproval | SessionStatus::AwaitingInput => {
                SessionStatus::Running
            }
            other => other,
        },
        EventKind::TurnCompleted(_) => SessionStatus::AwaitingInput,
        EventKind::RunFinished(r) => match r.outcome {
            nucleic_protocol::RunOutcome::Completed
            | nucleic_protocol::RunOutcome::Stopped
            | nucleic_protocol::RunOutcome::Interrupted => SessionStatus::Finished,
            nucleic_protocol::RunOutcome::ApiError
            | nucleic_protocol::RunOutcome::LimitReached
            | nucleic_protocol::RunOutcome::AgentError
            | nucleic_protocol::RunOutcome::Crashed
            | nucleic_protocol::RunOutcome::SpawnFailed => SessionStatus::Error,
        },
        EventKind::SessionStarted(_)
        | EventKind::AssistantText(_)
        | EventKind::Thinking(_)
        | EventKind::ToolCallStarted(_)
        | EventKind::ToolInputDelta(_)
        | EventKind::ToolCallCompleted(_)
        | EventKind::ToolResult(_)
            if current == SessionStatus::Idle || current == SessionStatus::AwaitingInput =>
        {
            SessionStatus::Running
        }
        _ => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleic_protocol::{RunFinished, RunOutcome, TextBlock};

    fn text() -> EventKind {
        EventKind::UserText(TextBlock {
            is_partial: false,
            message_id: "u".into(),
            text: "hi".into(),
        })
    }

    #[test]
    fn a_run_moves_through_the_expected_statuses() {
        let s = next_status(SessionStatus::Idle, &text(), 0);
        assert_eq!(s, SessionStatus::Running);
        let done = EventKind::RunFinished(RunFinished::new(RunOutcome::Crashed, None, Some(3)));
        assert_eq!(next_status(s, &done, 0), SessionStatus::Error);
        assert_eq!(
            next_status(SessionStatus::Error, &text(), 0),
            SessionStatus::Error,
            "terminal is final"
        );
    }
}
