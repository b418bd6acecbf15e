//! Finishing by pull request: the required checks gate it, the session's work is committed and
//! its branch pushed to the project's remote, and `gh` opens a PR whose body is the report.

use std::path::PathBuf;

use nucleic_git::{Remote, Repo, Worktree};
use nucleic_protocol::{CheckTrigger, EventKind, IntentResult, PullRequestOpened, Report};

use crate::context::Context;
use crate::dev_loop::report::last_turn;
use crate::error::{HostError, blocking};
use crate::finishing::gh::{self, GH_DEADLINE, NewPullRequest};

/// What a person asked for (`FinishAction::PullRequest`).
#[derive(Debug, Clone, Default)]
pub(crate) struct PullRequestRequest {
    pub title: Option<String>,
    pub draft: bool,
    pub base: Option<String>,
    pub repo: Option<String>,
    pub force_reason: Option<String>,
}

/// Longest title accepted (GitHub's limit is 256).
const MAX_TITLE: usize = 256;
/// Most changed files the body lists by name.
const LISTED_FILES: usize = 50;
/// Longest quote of the agent's summary in the body.
const MAX_SUMMARY: usize = 4_000;

impl Context {
    /// Opens a pull request for the session's branch; the client gets the recorded event.
    pub(crate) async fn open_pull_request(
        &self,
        id: &str,
        worktree: Worktree,
        root: PathBuf,
        request: PullRequestRequest,
        by: &str,
    ) -> Result<Option<IntentResult>, HostError> {
        let row = self.session_row(id).await?;
        let title = request.title.clone().unwrap_or_else(|| row.title.clone());
        let title = title.trim().to_owned();
        if title.is_empty() || title.chars().count() > MAX_TITLE || title.contains(char::is_control)
        {
            return Err(HostError::Invalid(format!(
                "a pull request title is one line of 1 to {MAX_TITLE} characters"
            )));
        }
        let base = request.base.clone().unwrap_or_else(|| worktree.base_ref.clone());
        if base.is_empty()
            || base.starts_with('-')
            || base.contains(|c: char| c.is_whitespace() || c.is_control() || c == ':')
        {
            return Err(HostError::Invalid(format!("`{base}` is not a branch name")));
        }
        if let Some(repo) = &request.repo
            && !gh::valid_repo(repo)
        {
            return Err(HostError::Invalid(format!(
                "`{repo}` is not a repository: expected OWNER/REPO or HOST/OWNER/REPO"
            )));
        }
        // Everything that can be refused without side effects first: gh, the remote, the repo.
        let gh_program = gh::locate()?;
        let base_ref = worktree.base_ref.clone();
        let open_root = root.clone();
        let remote: Remote =
            blocking(move || Repo::open(&open_root)?.project_remote(&base_ref)).await?;
        let repo = match request.repo.clone().or_else(|| gh::repo_of_url(&remote.url)) {
            Some(repo) => repo,
            None => {
                return Err(HostError::Invalid(format!(
                    "the remote `{}` ({}) names no GitHub repository: say which one (--repo \
                     HOST/OWNER/REPO)",
                    remote.name, remote.url
                )));
            }
        };
        let forced =
            self.gate_on_checks(id, row.project_id.as_deref(), request.force_reason).await?;
        let report = self.report(id, CheckTrigger::Request).await?;
        let transcript = PathBuf::from(&row.transcript);
        let events = blocking(move || nucleic_store::read_transcript(&transcript, 1)).await?.events;
        let summary = last_turn(&events).said.last().cloned();

        let (push_root, push_remote, message) = (root.clone(), remote.clone(), title.clone());
        let pushed = blocking(move || {
            let repo = Repo::open(&push_root)?;
            repo.commit_all(&worktree, &message)?;
            repo.push_branch(&worktree, &push_remote)
        })
        .await?;

        let body = body(&report, summary.as_deref(), id, forced.as_deref());
        let new = NewPullRequest {
            repo: repo.clone(),
            head: pushed.branch.clone(),
            base: base.clone(),
            title: title.clone(),
            body,
            draft: request.draft,
        };
        let cwd = self.gh_dir()?;
        let opened = gh::create(&gh_program, &new, &cwd, GH_DEADLINE).await?;
        let event = PullRequestOpened {
            url: opened.url,
            number: opened.number,
            state: if request.draft { "draft" } else { "open" }.into(),
            title,
            repo,
            head: pushed.branch,
            base,
            head_sha: pushed.tip,
            remote: remote.name,
            remote_url: remote.url,
            by: by.to_owned(),
            forced_reason: forced,
        };
        self.record(id, EventKind::PullRequestOpened(event.clone())).await?;
        Ok(Some(IntentResult::PullRequest(event)))
    }

    /// An empty directory of the host's own for gh to run in (0700).
    fn gh_dir(&self) -> Result<PathBuf, HostError> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = self.config.home.join("gh");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| HostError::Invalid(format!("cannot create {}: {e}", dir.display())))?;
        Ok(dir)
    }
}

/// The pull request's body: the agent's summary quoted, then the host's facts.
pub(crate) fn body(
    report: &Report,
    summary: Option<&str>,
    session: &str,
    forced: Option<&str>,
) -> String {
    let mut out = String::new();
    if let Some(summary) = summary.map(str::trim).filter(|s| !s.is_empty()) {
        out.push_str("The agent's summary (its words, not checked):\n\n");
        let mut quoted: String = summary.chars().take(MAX_SUMMARY).collect();
        if quoted.len() < summary.len() {
            quoted.push_str(" …");
        }
        for line in quoted.lines() {
            out.push_str(&format!("> {line}\n"));
        }
        out.push('\n');
    }
    out.push_str("### Checks (run by the host)\n\n");
    if report.checks.is_empty() {
        out.push_str("No check ran since the last prompt.\n");
    }
    for check in &report.checks {
        let mark = if check.is_pass() { "✅" } else { "❌" };
        out.push_str(&format!("- {mark} {}\n", check.summary()));
    }
    if let Some(forced) = forced {
        out.push_str(&format!("\n**Opened past failing required checks:** {forced}\n"));
    }
    if !report.contradictions.is_empty() {
        out.push_str("\n### Contradictions\n\n");
        for c in &report.contradictions {
            out.push_str(&format!("- the agent said \"{}\", but {}\n", c.claim, c.fact));
        }
    }
    out.push_str(&format!(
        "\n### Files changed: {} (+{} −{})\n\n",
        report.files.len(),
        report.additions,
        report.deletions
    ));
    for file in report.files.iter().take(LISTED_FILES) {
        out.push_str(&format!("- `{file}`\n"));
    }
    if report.files.len() > LISTED_FILES {
        out.push_str(&format!("- … and {} more\n", report.files.len() - LISTED_FILES));
    }
    out.push_str(&format!("\n---\nOpened by Nucleic from session `{session}`.\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use nucleic_protocol::{CheckFinished, CheckOutcome, Contradiction};

    #[test]
    fn the_body_quotes_the_agent_and_lists_the_facts() {
        let check = CheckFinished {
            name: "tests".into(),
            outcome: CheckOutcome::Failed,
            exit_code: Some(1),
            duration_ms: 500,
            passed: Some(1),
            failed: Some(1),
            skipped: None,
            runner: None,
            timed_out: false,
            flag: None,
            error: None,
            log_path: None,
            output_bytes: 10,
            log_bytes: 10,
            leftovers_killed: 0,
            required: true,
        };
        let report = Report {
            trigger: CheckTrigger::Request,
            task_paths: vec![],
            files: vec!["calc.py".into()],
            outside_task: vec![],
            additions: 2,
            deletions: 1,
            ahead: 0,
            behind: 0,
            checks: vec![check],
            approvals_asked: 0,
            approvals_denied: 0,
            cost_usd: 0.0,
            claims: vec![],
            contradictions: vec![Contradiction {
                claim: "All tests pass.".into(),
                fact: "tests FAILED".into(),
            }],
        };
        let text = body(&report, Some("Fixed it.\nAll tests pass."), "s1", Some("demo"));
        assert!(text.contains("> Fixed it.\n> All tests pass.\n"), "{text}");
        assert!(text.contains("❌ tests FAILED: 1 passed, 1 failed"), "{text}");
        assert!(text.contains("the agent said \"All tests pass.\", but tests FAILED"), "{text}");
        assert!(text.contains("Files changed: 1 (+2 −1)") && text.contains("- `calc.py`"));
        assert!(text.contains("past failing required checks:** demo"), "{text}");
    }
}
