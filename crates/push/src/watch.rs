//! The notifier's memory of each session in progress, from which it decides what deserves a push.

use std::collections::HashMap;

use nucleic_protocol::{SessionStatus, SessionSummary};

use crate::{NeedsPerson, needs_person};

/// The last summary of every session still under way, to judge the next change by
/// [`needs_person`]. A session that finished or failed is forgotten at once: a later change
/// from there (a rename, a resume) starts from nothing, which pushes only for a waiting approval
/// — what remembering it would have decided too. So the table holds the sessions in progress,
/// not every session the host ever ran (it grew by a whole summary per session before).
#[derive(Debug, Default)]
pub struct SessionWatch {
    last: HashMap<String, SessionSummary>,
}

impl SessionWatch {
    /// Takes in a session's new summary; says whether (and why) a person should hear of it.
    pub fn observe(&mut self, after: &SessionSummary) -> Option<NeedsPerson> {
        let settled = matches!(after.status, SessionStatus::Finished | SessionStatus::Error);
        let before = if settled {
            self.last.remove(&after.session_id)
        } else {
            self.last.insert(after.session_id.clone(), after.clone())
        };
        needs_person(before.as_ref(), after)
    }

    /// Sessions remembered now.
    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::summary_of as summary;
    use SessionStatus::*;

    #[test]
    fn a_thousand_finished_sessions_leave_nothing_behind() {
        let mut watch = SessionWatch::default();
        for n in 0..1000 {
            let id = format!("s{n}");
            assert_eq!(watch.observe(&summary(&id, Running, 0)), None);
            assert_eq!(
                watch.observe(&summary(&id, AwaitingInput, 0)),
                Some(NeedsPerson::TurnFinished)
            );
            assert_eq!(watch.observe(&summary(&id, Finished, 0)), Some(NeedsPerson::Finished));
        }
        assert!(watch.is_empty(), "{} sessions still remembered", watch.len());
    }

    #[test]
    fn sessions_in_progress_are_remembered_and_judged_as_before() {
        let mut watch = SessionWatch::default();
        watch.observe(&summary("a", Running, 0));
        watch.observe(&summary("b", AwaitingApproval, 1));
        assert_eq!(watch.len(), 2);
        // The same approval again is not news; a second one is.
        assert_eq!(watch.observe(&summary("b", AwaitingApproval, 1)), None);
        assert_eq!(watch.observe(&summary("b", AwaitingApproval, 2)), Some(NeedsPerson::Approval));
        assert_eq!(watch.observe(&summary("a", Error, 0)), Some(NeedsPerson::Failed));
        assert_eq!(watch.len(), 1);
    }

    #[test]
    fn a_forgotten_session_that_changes_again_pushes_only_what_it_should() {
        let mut watch = SessionWatch::default();
        watch.observe(&summary("a", Running, 0));
        assert_eq!(watch.observe(&summary("a", Finished, 0)), Some(NeedsPerson::Finished));
        // Renamed or its disk use updated after it finished: no second push, nothing kept.
        assert_eq!(watch.observe(&summary("a", Finished, 0)), None);
        assert!(watch.is_empty());
        // Resumed: its next turn's end is news again.
        assert_eq!(watch.observe(&summary("a", Running, 0)), None);
        assert_eq!(watch.observe(&summary("a", AwaitingInput, 0)), Some(NeedsPerson::TurnFinished));
        // Resumed straight into an approval.
        watch.observe(&summary("a", Finished, 0));
        assert_eq!(watch.observe(&summary("a", AwaitingApproval, 1)), Some(NeedsPerson::Approval));
    }
}
