//! Turning "the process ended" into a clear outcome: the last `result` says more than the exit
//! code (Claude reports API failures as `subtype: success` + `is_error: true`).

use nucleic_protocol::{RunFinished, RunOutcome};

use super::decode::TurnSummary;

pub use crate::supervisor::ProcessEnd;

/// Everything known when the agent's stdout closed.
#[derive(Debug)]
pub struct ExitFacts<'a> {
    pub end: ProcessEnd,
    pub last_turn: Option<&'a TurnSummary>,
    /// A turn started (`system/init`) and never produced a `result`.
    pub turn_open: bool,
    pub stop_requested: bool,
    /// The last non-empty stderr line, for the one-line reason.
    pub last_stderr: Option<&'a str>,
}

/// Classifies the end of a run.
pub fn classify(f: &ExitFacts<'_>) -> RunFinished {
    let exit_code = f.end.code;
    let done = |outcome, message: String| RunFinished::new(outcome, Some(message), exit_code);
    if f.stop_requested {
        return done(RunOutcome::Stopped, "stopped on request".into());
    }
    let how = match (f.end.code, f.end.signal) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        (None, None) => "ended".into(),
    };
    let with_stderr = |base: String| match f.last_stderr {
        Some(line) => format!("{base}: {line}"),
        None => base,
    };
    if f.turn_open {
        return done(
            RunOutcome::Crashed,
            with_stderr(format!("agent {how} in the middle of a turn")),
        );
    }
    match f.last_turn {
        Some(t) if !t.is_error => {
            if f.end.code == Some(0) {
                done(RunOutcome::Completed, "finished".into())
            } else {
                done(RunOutcome::Crashed, with_stderr(format!("agent {how} after its last turn")))
            }
        }
        Some(t) => {
            let text = t.result.clone().unwrap_or_else(|| t.subtype.clone());
            let reason = t.terminal_reason.as_deref().unwrap_or("");
            if reason == "api_error" || t.api_error_status.is_some() {
                done(RunOutcome::ApiError, text)
            } else if t.subtype == "error_max_turns" || t.subtype == "error_max_budget_usd" {
                done(RunOutcome::LimitReached, text)
            } else if reason.starts_with("aborted") {
                done(RunOutcome::Interrupted, format!("turn interrupted ({reason})"))
            } else {
                done(RunOutcome::AgentError, with_stderr(format!("agent reported {}", t.subtype)))
            }
        }
        None if f.end.code == Some(0) => done(RunOutcome::Completed, "no turn ran".into()),
        None => {
            done(RunOutcome::Crashed, with_stderr(format!("agent {how} before finishing a turn")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(
        is_error: bool,
        subtype: &str,
        reason: Option<&str>,
        status: Option<u16>,
    ) -> TurnSummary {
        TurnSummary {
            is_error,
            subtype: subtype.into(),
            terminal_reason: reason.map(Into::into),
            api_error_status: status,
            result: Some("text".into()),
        }
    }

    fn facts<'a>(
        t: Option<&'a TurnSummary>,
        code: Option<i32>,
        signal: Option<i32>,
    ) -> ExitFacts<'a> {
        ExitFacts {
            end: ProcessEnd { code, signal },
            last_turn: t,
            turn_open: false,
            stop_requested: false,
            last_stderr: Some("Error: boom"),
        }
    }

    #[test]
    fn outcomes() {
        let ok = turn(false, "success", Some("completed"), None);
        assert_eq!(classify(&facts(Some(&ok), Some(0), None)).outcome, RunOutcome::Completed);
        let api = turn(true, "success", Some("api_error"), Some(500));
        assert_eq!(classify(&facts(Some(&api), Some(1), None)).outcome, RunOutcome::ApiError);
        let aborted = turn(true, "error_during_execution", Some("aborted_tools"), None);
        assert_eq!(
            classify(&facts(Some(&aborted), Some(1), None)).outcome,
            RunOutcome::Interrupted
        );
        let turns = turn(true, "error_max_turns", Some("max_turns"), None);
        assert_eq!(classify(&facts(Some(&turns), Some(1), None)).outcome, RunOutcome::LimitReached);
        let exec = turn(true, "error_during_execution", None, None);
        let r = classify(&facts(Some(&exec), Some(1), None));
        assert_eq!(r.outcome, RunOutcome::AgentError);
        assert!(r.message.unwrap().contains("Error: boom"));
        let killed = classify(&facts(None, None, Some(9)));
        assert_eq!(killed.outcome, RunOutcome::Crashed);
        assert!(killed.message.unwrap().contains("signal 9"));
        let mut open = facts(Some(&ok), Some(3), None);
        open.turn_open = true;
        assert_eq!(classify(&open).outcome, RunOutcome::Crashed);
        let mut stopped = facts(None, None, Some(15));
        stopped.stop_requested = true;
        assert_eq!(classify(&stopped).outcome, RunOutcome::Stopped);
    }
}
