//! Project checks run by the host in a session's worktree (`nucleic_checks` does the running):
//! on request, after every turn (a project setting) and as the merge gate. Each run is recorded
//! as `checkStarted`, throttled `checkOutput` and `checkFinished` events; a stop of the session
//! or of the host kills it whole.

use std::path::PathBuf;
use std::sync::Weak;
use std::time::Duration;

use nucleic_checks::{CheckCommand, CheckError, CheckRun, LOG_CAP_BYTES, run_check};
use nucleic_protocol::{
    CheckFinished, CheckOutcome, CheckOutput, CheckSpec, CheckStarted, CheckTrigger, EventKind,
};
use tokio::sync::{mpsc, watch};

use crate::context::Context;
use crate::error::HostError;

/// Longest timeout a check may ask for (a day).
pub(crate) const MAX_TIMEOUT_SECS: u64 = 86_400;

/// Refuses checks a project cannot have: bad or repeated names, empty commands, zero or huge
/// timeouts, environment names that are not variable names or are the host's own.
pub(crate) fn validate_checks(checks: &[CheckSpec]) -> Result<(), HostError> {
    let mut names = Vec::new();
    for c in checks {
        let bad = |why: String| Err(HostError::Invalid(format!("check {:?}: {why}", c.name)));
        if c.name.is_empty()
            || c.name.len() > 64
            || !c.name.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
            || c.name.starts_with('.')
        {
            return bad("a name is 1-64 letters, digits, '-', '_' or '.'".into());
        }
        if names.contains(&c.name) {
            return bad("two checks have this name".into());
        }
        names.push(c.name.clone());
        if c.argv.first().is_none_or(|p| p.is_empty()) {
            return bad("the command is empty".into());
        }
        if c.timeout_secs == 0 || c.timeout_secs > MAX_TIMEOUT_SECS {
            return bad(format!("the timeout must be 1..={MAX_TIMEOUT_SECS} seconds"));
        }
        for var in &c.env {
            if var.is_empty() || !var.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
                return bad(format!("{var:?} is not an environment variable name"));
            }
            if nucleic_agents::isolation::is_host_variable(var.as_ref()) {
                return bad(format!("{var} is the host's own variable and never passed on"));
            }
        }
    }
    Ok(())
}

/// Runs the checks and the report that follow a turn, for every session whose project asks
/// for them (`checksAfterTurn`), until the host is gone.
pub(crate) async fn after_turns(host: Weak<Context>, mut turns: mpsc::UnboundedReceiver<String>) {
    while let Some(id) = turns.recv().await {
        let Some(host) = host.upgrade() else { break };
        tokio::spawn(async move {
            host.turn_ended(&id).await;
            host.after_turn(&id).await;
        });
    }
}

impl Context {
    /// The checks (if the project runs them after turns) and then the report. A session
    /// already running its checks is left to them; failures are the events' to tell.
    async fn after_turn(&self, id: &str) {
        if self.gate.is_stopping() {
            return;
        }
        let Ok(row) = self.session_row(id).await else { return };
        let Some(project_id) = row.project_id.clone() else { return };
        let Ok(project) = self.project(&project_id).await else { return };
        if !project.settings.checks_after_turn || row.worktree.is_none() {
            return;
        }
        if !project.settings.checks.is_empty()
            && self.run_checks(id, None, CheckTrigger::Turn).await.is_err()
        {
            return;
        }
        let _ = self.report(id, CheckTrigger::Turn).await;
    }

    /// Replaces a project's checks (validated) and, when given, whether they run after turns.
    pub async fn set_project_checks(
        &self,
        project_id: &str,
        checks: Vec<CheckSpec>,
        after_turn: Option<bool>,
    ) -> Result<nucleic_protocol::ProjectSummary, HostError> {
        validate_checks(&checks)?;
        let project = self.project(project_id).await?;
        let mut settings = project.settings;
        settings.checks = checks;
        if let Some(after) = after_turn {
            settings.checks_after_turn = after;
        }
        let id = project_id.to_owned();
        let row = self.catalog(move |c| c.update_project_settings(&id, &settings)).await?;
        Ok(self.project_summary(&row))
    }

    /// Runs the project's checks (`only`: the one named; `required_only`: the gate's) in the
    /// session's worktree, one after the other, recording each; their results.
    pub async fn run_checks(
        &self,
        id: &str,
        only: Option<&str>,
        trigger: CheckTrigger,
    ) -> Result<Vec<CheckFinished>, HostError> {
        let row = self.session_row(id).await?;
        let worktree = row
            .worktree
            .as_ref()
            .map(|w| PathBuf::from(&w.path))
            .ok_or_else(|| HostError::Invalid(format!("session {id} has no worktree")))?;
        let project_id = row
            .project_id
            .clone()
            .ok_or_else(|| HostError::Invalid(format!("session {id} belongs to no project")))?;
        let project = self.project(&project_id).await?;
        let all = project.settings.checks;
        let specs: Vec<CheckSpec> = match (only, trigger) {
            (Some(name), _) => {
                let found: Vec<_> = all.iter().filter(|c| c.name == name).cloned().collect();
                if found.is_empty() {
                    let names: Vec<_> = all.iter().map(|c| c.name.as_str()).collect();
                    return Err(HostError::NotFound(format!(
                        "check {name:?} (the project has: {})",
                        if names.is_empty() { "none".to_owned() } else { names.join(", ") }
                    )));
                }
                found
            }
            (None, CheckTrigger::Finish) => all.into_iter().filter(|c| c.required).collect(),
            (None, CheckTrigger::Turn | CheckTrigger::Request) => all,
        };
        if specs.is_empty() && trigger == CheckTrigger::Request {
            return Err(HostError::Invalid(format!(
                "project {} has no checks (nucleic project check add)",
                project.name
            )));
        }
        let runs = self.checks.of(id);
        let _turn = runs.turn.try_lock().map_err(|_| {
            HostError::Invalid(format!(
                "session {id} is already running its checks; wait for them or stop the session"
            ))
        })?;
        runs.stop.send_replace(false);
        let mut results = Vec::new();
        for spec in specs {
            let stop = runs.stop.subscribe();
            if *stop.borrow() {
                break;
            }
            let sandbox = &project.settings.sandbox;
            results.push(self.run_one(id, &worktree, sandbox, spec, trigger, stop).await?);
        }
        Ok(results)
    }

    async fn run_one(
        &self,
        id: &str,
        worktree: &std::path::Path,
        sandbox: &nucleic_protocol::ProjectSandbox,
        spec: CheckSpec,
        trigger: CheckTrigger,
        stop: watch::Receiver<bool>,
    ) -> Result<CheckFinished, HostError> {
        let started = CheckStarted { name: spec.name.clone(), argv: spec.argv.clone(), trigger };
        self.record(id, EventKind::CheckStarted(started)).await?;
        let log_path = self.config.sessions_dir().join(id).join("checks").join(format!(
            "{}-{}.log",
            spec.name,
            crate::clock::now().unix_millis()
        ));
        let command = CheckCommand {
            argv: spec.argv.clone(),
            cwd: worktree.to_owned(),
            timeout: Duration::from_secs(spec.timeout_secs),
            env_allow: spec.env.clone(),
            isolation: crate::agents::launch::check_isolation(&self.config, worktree, sandbox)?,
            log_path: log_path.clone(),
            log_cap: LOG_CAP_BYTES,
        };
        let (pieces, mut texts) = mpsc::unbounded_channel::<String>();
        let run = run_check(&command, move |text| drop(pieces.send(text)), stop);
        let name = spec.name.clone();
        let relay = async {
            while let Some(text) = texts.recv().await {
                let output = CheckOutput { name: name.clone(), text };
                // A failed write is the transcript's problem; the run goes on.
                let _ = self.record(id, EventKind::CheckOutput(output)).await;
            }
        };
        let (result, ()) = tokio::join!(run, relay);
        let finished = judge(&spec, result, &log_path);
        self.record(id, EventKind::CheckFinished(finished.clone())).await?;
        Ok(finished)
    }
}

/// The host's verdict on a run: timeouts and stops first; then the parsed counts, which win over
/// the exit code when the output reports failures (flagged); then the exit code.
pub(crate) fn judge(
    spec: &CheckSpec,
    result: Result<CheckRun, CheckError>,
    log_path: &std::path::Path,
) -> CheckFinished {
    let mut f = CheckFinished {
        name: spec.name.clone(),
        outcome: CheckOutcome::Error,
        exit_code: None,
        duration_ms: 0,
        passed: None,
        failed: None,
        skipped: None,
        runner: None,
        timed_out: false,
        flag: None,
        error: None,
        log_path: None,
        output_bytes: 0,
        log_bytes: 0,
        leftovers_killed: 0,
        required: spec.required,
    };
    let run = match result {
        Ok(run) => run,
        Err(e) => {
            f.error = Some(e.to_string());
            return f;
        }
    };
    f.exit_code = run.exit_code;
    f.duration_ms = u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX);
    f.timed_out = run.timed_out;
    f.log_path = Some(log_path.to_string_lossy().into_owned());
    f.output_bytes = run.output_bytes;
    f.log_bytes = run.log_bytes;
    f.leftovers_killed = run.leftovers_killed as u64;
    if let Some(c) = run.counts {
        f.passed = Some(c.passed);
        f.failed = Some(c.failed);
        f.skipped = Some(c.skipped);
        f.runner = Some(c.runner.to_owned());
    }
    let exit_ok = run.exit_code == Some(0);
    f.outcome = if run.timed_out {
        CheckOutcome::TimedOut
    } else if run.stopped {
        CheckOutcome::Stopped
    } else {
        match run.counts {
            Some(c) if c.failed > 0 => {
                if exit_ok {
                    f.flag = Some(format!(
                        "exit code 0, but the output reports {} failed: the counts win",
                        c.failed
                    ));
                }
                CheckOutcome::Failed
            }
            Some(_) if !exit_ok => {
                f.flag = Some(format!(
                    "the output reports no failure, but it {}: it failed",
                    run.exit_code
                        .map_or("was killed by a signal".to_owned(), |c| format!("exited {c}"))
                ));
                CheckOutcome::Failed
            }
            _ if exit_ok => CheckOutcome::Passed,
            _ => CheckOutcome::Failed,
        }
    };
    if run.output_left_open && f.flag.is_none() {
        f.flag = Some("a process it started kept its output open after it was killed".into());
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> CheckSpec {
        CheckSpec {
            name: name.into(),
            argv: vec!["true".into()],
            timeout_secs: 10,
            env: vec![],
            required: true,
        }
    }

    fn run(exit: Option<i32>, counts: Option<(u64, u64)>) -> CheckRun {
        CheckRun {
            exit_code: exit,
            signal: None,
            duration: Duration::from_millis(5),
            timed_out: false,
            stopped: false,
            output_bytes: 10,
            log_bytes: 10,
            counts: counts.map(|(p, f)| nucleic_checks::Counts {
                passed: p,
                failed: f,
                skipped: 0,
                runner: "plain",
            }),
            leftovers_killed: 0,
            output_left_open: false,
        }
    }

    #[test]
    fn printed_failures_win_over_a_zero_exit_and_are_flagged() {
        let f = judge(&spec("t"), Ok(run(Some(0), Some((2, 1)))), "/l".as_ref());
        assert_eq!(f.outcome, CheckOutcome::Failed);
        assert!(f.flag.unwrap().contains("counts win"));
        let f = judge(&spec("t"), Ok(run(Some(0), Some((3, 0)))), "/l".as_ref());
        assert_eq!((f.outcome, f.flag), (CheckOutcome::Passed, None));
        let f = judge(&spec("t"), Ok(run(Some(101), Some((3, 0)))), "/l".as_ref());
        assert_eq!(f.outcome, CheckOutcome::Failed);
        assert!(f.flag.is_some());
        let f = judge(&spec("t"), Ok(run(Some(1), None)), "/l".as_ref());
        assert_eq!((f.outcome, f.flag), (CheckOutcome::Failed, None));
    }

    #[test]
    fn bad_checks_are_refused_with_what_is_wrong() {
        let mut dup = vec![spec("tests"), spec("tests")];
        assert!(validate_checks(&dup).unwrap_err().to_string().contains("two checks"));
        dup.pop();
        dup[0].env = vec!["NUCLEIC_HOME".into()];
        assert!(validate_checks(&dup).unwrap_err().to_string().contains("host's own"));
        let mut bad = spec("../x");
        assert!(validate_checks(std::slice::from_ref(&bad)).is_err());
        bad = spec("ok");
        bad.argv.clear();
        assert!(validate_checks(&[bad]).unwrap_err().to_string().contains("empty"));
    }
}
