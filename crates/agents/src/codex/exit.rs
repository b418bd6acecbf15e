//! How a `codex app-server` run ended: the facts the adapter collected, classified into a
//! [`RunFinished`].

use std::time::Duration;

use nucleic_protocol::{RunFinished, RunOutcome};

/// Everything known when `codex app-server` ended.
#[derive(Debug, Clone, Default)]
pub struct CodexExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// How the last turn ended (`completed`, `interrupted`, `failed`).
    pub last_turn: Option<String>,
    /// A turn started and never completed.
    pub turn_open: bool,
    /// The handshake or thread start was refused.
    pub setup_failed: Option<String>,
    pub stop_requested: bool,
    /// The adapter gave up on a turn that made no progress (see `provider_timeout`); the text
    /// says why.
    pub gave_up: Option<String>,
    /// What the last failed turn reported (codex fails a turn when its provider gives up).
    pub turn_error: Option<String>,
    pub last_stderr: Option<String>,
}

/// Why the adapter gave up on `who` after `limit` without progress (`during`: when), kept in
/// `slot` for the exit classification; returned for the watchdog to report.
pub(crate) fn give_up(
    slot: &mut Option<String>,
    who: &str,
    during: &str,
    limit: Duration,
) -> String {
    let why = format!(
        "{who} made no progress for {} s{during} (its model provider is unreachable or not answering, and codex retries forever); Nucleic gave up and stopped it",
        limit.as_secs_f32()
    );
    *slot = Some(why.clone());
    why
}

/// Classifies the end of a `codex app-server` run.
pub fn classify_codex(f: &CodexExit) -> RunFinished {
    let done = |outcome, message: String| RunFinished::new(outcome, Some(message), f.code);
    if let Some(why) = &f.gave_up {
        return done(RunOutcome::ApiError, why.clone());
    }
    if f.stop_requested {
        return done(RunOutcome::Stopped, "stopped on request".into());
    }
    let how = match (f.code, f.signal) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        (None, None) => "ended".into(),
    };
    let with_stderr = |base: String| match &f.last_stderr {
        Some(line) => format!("{base}: {line}"),
        None => base,
    };
    if let Some(why) = &f.setup_failed {
        return done(RunOutcome::AgentError, why.clone());
    }
    if f.turn_open {
        return done(
            RunOutcome::Crashed,
            with_stderr(format!("agent {how} in the middle of a turn")),
        );
    }
    match (f.last_turn.as_deref(), f.code) {
        (Some("completed"), Some(0)) => done(RunOutcome::Completed, "finished".into()),
        (Some("interrupted"), _) => done(RunOutcome::Interrupted, "turn interrupted".into()),
        (Some("failed"), _) => done(
            RunOutcome::ApiError,
            match &f.turn_error {
                Some(e) => format!("the last turn failed: {e}"),
                None => "the last turn failed".into(),
            },
        ),
        (None, Some(0)) => done(RunOutcome::Completed, "no turn ran".into()),
        (Some(_), _) => {
            done(RunOutcome::Crashed, with_stderr(format!("agent {how} after its last turn")))
        }
        (None, _) => {
            done(RunOutcome::Crashed, with_stderr(format!("agent {how} before finishing a turn")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_are_classified() {
        let ok =
            CodexExit { code: Some(0), last_turn: Some("completed".into()), ..Default::default() };
        assert_eq!(classify_codex(&ok).outcome, RunOutcome::Completed);
        let open = CodexExit { code: Some(1), turn_open: true, ..Default::default() };
        assert_eq!(classify_codex(&open).outcome, RunOutcome::Crashed);
        let stopped = CodexExit { signal: Some(15), stop_requested: true, ..Default::default() };
        assert_eq!(classify_codex(&stopped).outcome, RunOutcome::Stopped);
        let bad =
            CodexExit { code: Some(1), last_turn: Some("completed".into()), ..Default::default() };
        assert_eq!(classify_codex(&bad).outcome, RunOutcome::Crashed);
        let gave_up = CodexExit {
            signal: Some(15),
            stop_requested: true,
            turn_open: true,
            gave_up: Some("no progress".into()),
            ..Default::default()
        };
        let f = classify_codex(&gave_up);
        assert_eq!((f.outcome, f.message.as_deref()), (RunOutcome::ApiError, Some("no progress")));
    }
}
