//! The report: after a turn (when the project runs its checks after turns) and on request, the
//! agent's claims from its last turn next to the host's facts — the diff, commits, the checks'
//! results, approvals, cost — with every contradiction flagged. Facts win; claims are quoted.

use std::path::PathBuf;

use nucleic_checks::{ClaimKind, claims_in};
use nucleic_protocol::{
    CheckFinished, CheckTrigger, Contradiction, DecisionKind, Event, EventKind, Report, ReportClaim,
};

use crate::context::Context;
use crate::error::{HostError, blocking};

/// Most changed files a contradiction lists by name.
const LISTED_FILES: usize = 12;

/// What the transcript says about the last prompt and what followed it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct LastTurn {
    pub prompt: String,
    /// The agent's whole text blocks since the prompt.
    pub said: Vec<String>,
    /// The latest result of each check since the prompt, in the order they first ran.
    pub checks: Vec<CheckFinished>,
    pub approvals_asked: u64,
    pub approvals_denied: u64,
}

/// Reads the last turn out of a session's events.
pub(crate) fn last_turn(events: &[Event]) -> LastTurn {
    let start = events
        .iter()
        .rposition(|e| matches!(&e.kind, EventKind::UserText(t) if !t.is_partial))
        .unwrap_or(0);
    let mut turn = LastTurn::default();
    for e in &events[start..] {
        match &e.kind {
            EventKind::UserText(t) if !t.is_partial => turn.prompt = t.text.clone(),
            EventKind::AssistantText(t) if !t.is_partial => turn.said.push(t.text.clone()),
            EventKind::CheckFinished(c) => {
                match turn.checks.iter_mut().find(|x| x.name == c.name) {
                    Some(slot) => *slot = c.clone(),
                    None => turn.checks.push(c.clone()),
                }
            }
            EventKind::ApprovalRequested(_) => turn.approvals_asked += 1,
            EventKind::ApprovalResolved(r)
                if matches!(r.decision, DecisionKind::Deny | DecisionKind::DenyAndStop) =>
            {
                turn.approvals_denied += 1;
            }
            _ => {}
        }
    }
    turn
}

/// Paths a prompt names: words with a `/` or a file extension (`src/lib.rs`, `calc.py`), not
/// URLs, quotes and trailing punctuation stripped.
pub(crate) fn paths_named(prompt: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in prompt.split_whitespace() {
        let w = word.trim_matches(|c: char| "\"'`()[]{}<>,;:!?".contains(c)).trim_end_matches('.');
        if w.contains("://") || w.len() < 3 || w.starts_with('-') {
            continue;
        }
        let has_ext = w.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && !ext.chars().all(|c| c.is_ascii_digit())
        });
        let looks_like_path = w.contains('/') || has_ext;
        if looks_like_path && w.chars().all(|c| c.is_alphanumeric() || "/._-".contains(c)) {
            let w = w.trim_start_matches("./").trim_end_matches('/').to_owned();
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// Files outside every named path (a file, or a directory and what is under it).
fn outside(files: &[String], named: &[String]) -> Vec<String> {
    if named.is_empty() {
        return Vec::new();
    }
    files
        .iter()
        .filter(|f| !named.iter().any(|n| *f == n || f.starts_with(&format!("{n}/"))))
        .cloned()
        .collect()
}

/// The claims the facts contradict: tests pass or fixed while a check failed; a number of
/// changed files that is not the diff's.
pub(crate) fn contradictions(
    claims: &[nucleic_checks::Claim],
    checks: &[CheckFinished],
    files: &[String],
) -> Vec<Contradiction> {
    let failing: Vec<&CheckFinished> = checks.iter().filter(|c| !c.is_pass()).collect();
    let mut out = Vec::new();
    for claim in claims {
        let fact = match claim.kind {
            ClaimKind::TestsPass | ClaimKind::Fixed if !failing.is_empty() => {
                let what: Vec<String> = failing.iter().map(|c| c.summary()).collect();
                Some(format!("the host's check {}", what.join("; ")))
            }
            ClaimKind::FilesChanged(n) if n != files.len() as u64 => {
                let mut listed: Vec<&str> =
                    files.iter().take(LISTED_FILES).map(String::as_str).collect();
                if files.len() > LISTED_FILES {
                    listed.push("…");
                }
                Some(format!(
                    "the diff has {} changed file{}{}",
                    files.len(),
                    if files.len() == 1 { "" } else { "s" },
                    if listed.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", listed.join(", "))
                    }
                ))
            }
            _ => None,
        };
        if let Some(fact) = fact {
            out.push(Contradiction { claim: claim.quote.clone(), fact });
        }
    }
    out
}

fn claim_kind(kind: ClaimKind) -> String {
    match kind {
        ClaimKind::TestsPass => "testsPass".into(),
        ClaimKind::Fixed => "fixed".into(),
        ClaimKind::FilesChanged(n) => format!("filesChanged({n})"),
    }
}

impl Context {
    /// Builds the session's report from its transcript and its worktree's facts, records it as
    /// a `report` event and returns it.
    pub async fn report(&self, id: &str, trigger: CheckTrigger) -> Result<Report, HostError> {
        let row = self.session_row(id).await?;
        let transcript = PathBuf::from(&row.transcript);
        let events = blocking(move || nucleic_store::read_transcript(&transcript, 1)).await?.events;
        let turn = last_turn(&events);
        let facts = self.git_facts(id, false).await?;
        let files: Vec<String> = facts.files.iter().map(|f| f.path.clone()).collect();
        let task_paths = paths_named(&turn.prompt);
        let claims: Vec<_> = turn.said.iter().flat_map(|t| claims_in(t)).collect();
        let report = Report {
            trigger,
            outside_task: outside(&files, &task_paths),
            task_paths,
            additions: facts.files.iter().map(|f| f.additions).sum(),
            deletions: facts.files.iter().map(|f| f.deletions).sum(),
            ahead: facts.ahead,
            behind: facts.behind,
            contradictions: contradictions(&claims, &turn.checks, &files),
            files,
            checks: turn.checks,
            approvals_asked: turn.approvals_asked,
            approvals_denied: turn.approvals_denied,
            cost_usd: row.cost_usd,
            claims: claims
                .iter()
                .map(|c| ReportClaim { kind: claim_kind(c.kind), quote: c.quote.clone() })
                .collect(),
        };
        self.record(id, EventKind::Report(report.clone())).await?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleic_protocol::CheckOutcome;

    fn check(name: &str, outcome: CheckOutcome) -> CheckFinished {
        CheckFinished {
            name: name.into(),
            outcome,
            exit_code: Some(1),
            duration_ms: 10,
            passed: Some(1),
            failed: Some(1),
            skipped: None,
            runner: Some("pytest".into()),
            timed_out: false,
            flag: None,
            error: None,
            log_path: None,
            output_bytes: 0,
            log_bytes: 0,
            leftovers_killed: 0,
            required: true,
        }
    }

    #[test]
    fn a_passing_claim_against_a_failed_check_is_a_contradiction_quoting_the_claim() {
        let claims = claims_in("Fixed the bug. All tests pass.");
        let found =
            contradictions(&claims, &[check("tests", CheckOutcome::Failed)], &["calc.py".into()]);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].claim, "All tests pass.");
        assert!(found[1].fact.contains("tests FAILED: 1 passed, 1 failed"), "{}", found[1].fact);
        assert!(contradictions(&claims, &[check("tests", CheckOutcome::Passed)], &[]).is_empty());
    }

    #[test]
    fn a_file_count_the_diff_does_not_have_is_a_contradiction() {
        let files: Vec<String> = (0..12).map(|i| format!("f{i}.rs")).collect();
        let found = contradictions(&claims_in("I changed one file."), &[], &files);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].fact.starts_with("the diff has 12 changed files: f0.rs"),
            "{}",
            found[0].fact
        );
        assert!(contradictions(&claims_in("I changed one file."), &[], &files[..1]).is_empty());
    }

    #[test]
    fn paths_a_task_names_and_files_outside_them() {
        let named = paths_named(
            "edit calc.py: return a - b -> return a + b, see src/ and https://x.io/a.b",
        );
        assert_eq!(named, vec!["calc.py".to_owned(), "src".to_owned()]);
        let files = vec!["calc.py".into(), "src/a.rs".into(), "README.md".into()];
        assert_eq!(outside(&files, &named), vec!["README.md".to_owned()]);
        assert!(outside(&files, &[]).is_empty());
        assert!(paths_named("fix the bug, version 1.2 please").is_empty());
    }
}
