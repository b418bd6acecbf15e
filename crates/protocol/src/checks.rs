//! Project checks (commands the host runs itself: tests, lint, build) and the report that puts
//! an agent's claims next to the host's facts. See `docs/dev-loop.md`.

use crate::is_false;
use serde::{Deserialize, Serialize};

/// A named command a project declares; run by the host in a session's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct CheckSpec {
    /// Unique within the project (`tests`, `lint`, `build`).
    pub name: String,
    /// Program and arguments, run without a shell.
    pub argv: Vec<String>,
    /// Killed (its whole process tree) after this many seconds.
    #[serde(rename = "timeoutSecs")]
    pub timeout_secs: u64,
    /// Host environment variables passed on, besides PATH, HOME and the locale; never
    /// `NUCLEIC_*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// A failing required check refuses merge / squash / rebase (unless forced with a reason).
    #[serde(default = "yes")]
    pub required: bool,
}

fn yes() -> bool {
    true
}

/// The host started a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct CheckStarted {
    pub name: String,
    pub argv: Vec<String>,
    /// `turn` (after a turn), `request` (someone asked) or `finish` (the merge gate).
    pub trigger: CheckTrigger,
}

/// Why a check ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum CheckTrigger {
    Turn,
    Request,
    Finish,
}

/// Output of a running check, batched (at most every 250 ms; the first MiB of a run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct CheckOutput {
    pub name: String,
    pub text: String,
}

/// How a check ended, as the host judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum CheckOutcome {
    Passed,
    Failed,
    /// Killed at its timeout.
    TimedOut,
    /// Killed on request (the session or the host stopped).
    Stopped,
    /// It could not run (not found, not executable, no worktree).
    Error,
}

/// A check ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct CheckFinished {
    pub name: String,
    pub outcome: CheckOutcome,
    #[serde(rename = "exitCode", default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(rename = "durationMs")]
    pub duration_ms: u64,
    /// Test counts parsed from the output (absent when no known runner's lines were seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    /// Whose lines the counts came from (`cargo`, `pytest`, `plain`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    #[serde(rename = "timedOut", default, skip_serializing_if = "is_false")]
    pub timed_out: bool,
    /// The counts and the exit code disagreed; this says how (the counts won).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
    /// Why it could not run, for `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The full output (0600), up to its cap.
    #[serde(rename = "logPath", default, skip_serializing_if = "Option::is_none")]
    pub log_path: Option<String>,
    #[serde(rename = "outputBytes", default)]
    pub output_bytes: u64,
    /// Bytes of the output kept in the log (less than `outputBytes` when capped).
    #[serde(rename = "logBytes", default)]
    pub log_bytes: u64,
    /// Processes it left running that were killed when it ended.
    #[serde(rename = "leftoversKilled", default, skip_serializing_if = "is_zero")]
    pub leftovers_killed: u64,
    #[serde(default = "yes")]
    pub required: bool,
}

impl CheckFinished {
    pub fn is_pass(&self) -> bool {
        self.outcome == CheckOutcome::Passed
    }

    /// One line a person reads: `tests failed: 2 passed, 1 failed (exit 1, 0.4 s)`.
    pub fn summary(&self) -> String {
        let outcome = match self.outcome {
            CheckOutcome::Passed => "passed",
            CheckOutcome::Failed => "FAILED",
            CheckOutcome::TimedOut => "TIMED OUT",
            CheckOutcome::Stopped => "stopped",
            CheckOutcome::Error => "could not run",
        };
        let mut line = format!("{} {outcome}", self.name);
        if let (Some(p), Some(f)) = (self.passed, self.failed) {
            line.push_str(&format!(": {p} passed, {f} failed"));
            if let Some(s) = self.skipped.filter(|s| *s > 0) {
                line.push_str(&format!(", {s} skipped"));
            }
        }
        let exit = self.exit_code.map_or("no exit code".to_owned(), |c| format!("exit {c}"));
        line.push_str(&format!(" ({exit}, {:.1} s)", self.duration_ms as f64 / 1000.0));
        if let Some(e) = &self.error {
            line.push_str(&format!(": {e}"));
        }
        if let Some(f) = &self.flag {
            line.push_str(&format!(" [{f}]"));
        }
        line
    }
}

impl Report {
    /// True when no claim is contradicted and every check that ran passed.
    pub fn is_clean(&self) -> bool {
        self.contradictions.is_empty() && self.checks.iter().all(CheckFinished::is_pass)
    }

    /// One line: `report: 2 contradictions; tests FAILED; 3 files (+10 -2)`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        match self.contradictions.len() {
            0 => parts.push("no contradiction".to_owned()),
            1 => parts.push("1 CONTRADICTION".to_owned()),
            n => parts.push(format!("{n} CONTRADICTIONS")),
        }
        for c in &self.checks {
            parts.push(format!("{} {}", c.name, if c.is_pass() { "passed" } else { "FAILED" }));
        }
        parts.push(format!(
            "{} file{} (+{} -{})",
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
            self.additions,
            self.deletions
        ));
        format!("report: {}", parts.join("; "))
    }

    /// The whole report as text, facts first.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(format!("Facts (the host's){}", if self.is_clean() { "" } else { " — NOT CLEAN" }));
        line(format!(
            "  files changed: {} (+{} -{}): {}",
            self.files.len(),
            self.additions,
            self.deletions,
            if self.files.is_empty() { "none".to_owned() } else { self.files.join(", ") }
        ));
        if !self.task_paths.is_empty() {
            line(format!("  the task named: {}", self.task_paths.join(", ")));
            if !self.outside_task.is_empty() {
                line(format!("  changed outside them: {}", self.outside_task.join(", ")));
            }
        }
        line(format!("  commits: {} ahead, {} behind the base", self.ahead, self.behind));
        if self.checks.is_empty() {
            line("  checks: none ran since the last prompt".to_owned());
        }
        for c in &self.checks {
            line(format!("  check {}", c.summary()));
        }
        line(format!(
            "  approvals: {} asked, {} denied; cost ${:.4}",
            self.approvals_asked, self.approvals_denied, self.cost_usd
        ));
        line("Claims (the agent's words)".to_owned());
        if self.claims.is_empty() {
            line("  none recognised".to_owned());
        }
        for c in &self.claims {
            line(format!("  {}: \"{}\"", c.kind, c.quote));
        }
        if !self.contradictions.is_empty() {
            line("Contradictions (facts win)".to_owned());
            for c in &self.contradictions {
                line(format!("  \"{}\" — but {}", c.claim, c.fact));
            }
        }
        out
    }
}

/// The host's account of a session next to the agent's: facts win, claims are quoted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Report {
    /// `turn` (after a turn) or `request`.
    pub trigger: CheckTrigger,
    /// Paths the task (the last prompt) named, if it named any.
    #[serde(rename = "taskPaths", default, skip_serializing_if = "Vec::is_empty")]
    pub task_paths: Vec<String>,
    /// Files changed vs the base (uncommitted and untracked work included).
    pub files: Vec<String>,
    /// Changed files outside the paths the task named.
    #[serde(rename = "outsideTask", default, skip_serializing_if = "Vec::is_empty")]
    pub outside_task: Vec<String>,
    pub additions: u64,
    pub deletions: u64,
    pub ahead: u64,
    pub behind: u64,
    /// The latest result of each check since the last prompt.
    pub checks: Vec<CheckFinished>,
    #[serde(rename = "approvalsAsked")]
    pub approvals_asked: u64,
    #[serde(rename = "approvalsDenied")]
    pub approvals_denied: u64,
    #[serde(rename = "costUSD")]
    pub cost_usd: f64,
    /// What the agent said it did, quoted from its last turn.
    pub claims: Vec<ReportClaim>,
    /// Claims the facts contradict.
    pub contradictions: Vec<Contradiction>,
}

/// One claim of the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct ReportClaim {
    /// `testsPass`, `fixed` or `filesChanged`.
    pub kind: String,
    /// The sentence it came from.
    pub quote: String,
}

/// A claim and the fact that contradicts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct Contradiction {
    /// The agent's words.
    pub claim: String,
    /// What the host found.
    pub fact: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
