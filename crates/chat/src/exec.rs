//! Each `/cc` command (and each button press) of a paired user as host requests through the
//! client: tasks start sessions, answers resolve what a code names (an unknown or resolved code
//! is answered plainly), a critical approval and `rollback` need a second confirmation.

use nucleic_client::ClientError;
use nucleic_protocol::{
    Decision, FinishAction, Intent, ProtocolErrorCode, QuestionAnswer, SessionMode,
};

use crate::bridge::{Bridge, BridgeError, now_ms};
use crate::command::{Answer, Command, HELP};
use crate::state::{ChatState, Pending, PendingKind};
use crate::transport::Button;

/// How long the first `rollback`, or the first approve of a critical request, waits for its
/// second confirmation.
pub const CONFIRM_WINDOW_MS: i64 = 2 * 60 * 1000;

/// What the bridge answers a command with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reply {
    pub text: String,
    pub buttons: Vec<Vec<Button>>,
}

impl From<String> for Reply {
    fn from(text: String) -> Reply {
        Reply { text, buttons: Vec::new() }
    }
}

impl From<&str> for Reply {
    fn from(text: &str) -> Reply {
        Reply::from(text.to_owned())
    }
}

/// A short session id for people (its first 8 characters).
pub(crate) fn short(session: &str) -> &str {
    session.get(..8).unwrap_or(session)
}

/// An answer to a pending item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Yes,
    No,
}

impl Bridge {
    /// Runs `command` for `user` in `chat`; what to answer. A host refusal is an answer too;
    /// only the bridge's own store failing is an error.
    pub(crate) async fn execute(
        &mut self,
        chat: &str,
        user: &str,
        command: Command,
    ) -> Result<Reply, BridgeError> {
        match self.run_command(chat, user, command).await {
            Ok(reply) => Ok(reply),
            Err(Failure::Bridge(e)) => Err(e),
            Err(Failure::Host(e)) => Ok(Reply::from(host_failure(&e))),
            Err(Failure::Say(text)) => Ok(Reply::from(text)),
        }
    }

    /// A button press (`a:`/`d:` approve/deny, `p:`/`r:` confirm/reject a plan, `q:CODE:N` an
    /// option of a question); the notice the presser sees.
    pub(crate) async fn on_button(
        &mut self,
        chat: &str,
        user: &str,
        data: &str,
    ) -> Result<String, BridgeError> {
        let mut parts = data.splitn(3, ':');
        let (verb, code, extra) = (parts.next(), parts.next(), parts.next());
        let answer = |code: &str| Answer { code: Some(code.to_owned()), reason: None };
        let command = match (verb, code) {
            (Some("a"), Some(code)) => Command::Approve(answer(code)),
            (Some("d"), Some(code)) => Command::Deny(answer(code)),
            (Some("p"), Some(code)) => Command::Confirm(answer(code)),
            (Some("r"), Some(code)) => Command::Reject(answer(code)),
            (Some("q"), Some(code)) => {
                let reply = match self.answer_question(chat, code, extra).await {
                    Ok(reply) => reply,
                    Err(Failure::Bridge(e)) => return Err(e),
                    Err(Failure::Host(e)) => Reply::from(host_failure(&e)),
                    Err(Failure::Say(text)) => Reply::from(text),
                };
                self.say(chat, &reply.text, &reply.buttons)?;
                return Ok(first_line(&reply.text));
            }
            _ => return Ok("This button is not one the bridge knows.".to_owned()),
        };
        let reply = self.execute(chat, user, command).await?;
        self.say(chat, &reply.text, &reply.buttons)?;
        Ok(first_line(&reply.text))
    }

    async fn run_command(
        &mut self,
        chat: &str,
        _user: &str,
        command: Command,
    ) -> Result<Reply, Failure> {
        let key = chat.to_owned();
        let mut state = self.state.chat(&key)?;
        if command.quotes_the_work() && self.state.needs_you_only(chat)? {
            return Err(Failure::Say(
                "This chat gets \"needs you\" notices only, without content: see it in the cockpit, or /cc needs-you off.".into(),
            ));
        }
        match command {
            Command::Help => Ok(HELP.into()),
            Command::Task(task) => self.task(chat, &mut state, task, false).await,
            Command::Plan(task) => self.task(chat, &mut state, task, true).await,
            Command::Say(text) => {
                if let Some(pick) = state.session.as_deref().and_then(crate::outside::picked) {
                    return self.adopt(chat, &mut state, pick, text).await;
                }
                let session = current(&state)?;
                let (text, told) = self.with_attachments(chat, &text)?;
                self.client.send_input(&session, &text).await?;
                self.attachments_told(chat, told)?;
                Ok(format!("Sent to session {}.", short(&session)).into())
            }
            Command::Approve(answer) => self.answer(chat, answer, Verdict::Yes, false).await,
            Command::Deny(answer) => self.answer(chat, answer, Verdict::No, false).await,
            Command::Confirm(answer) => self.answer(chat, answer, Verdict::Yes, true).await,
            Command::Reject(answer) => self.answer(chat, answer, Verdict::No, true).await,
            Command::Mode(mode) => {
                let session = current(&state)?;
                let intent =
                    Intent::SetMode { session_id: session.clone(), mode: mode.to_string() };
                self.client.intent(intent).await?;
                Ok(format!("Session {} is now in {mode} mode.", short(&session)).into())
            }
            Command::Project(name) => {
                let projects = self.client.list_projects().await?;
                let found = projects.iter().find(|p| p.name == name || p.project_id == name);
                let Some(project) = found else {
                    let names: Vec<&str> = projects.iter().map(|p| p.name.as_str()).collect();
                    return Err(Failure::Say(format!(
                        "No project {name:?}. Projects: {}",
                        if names.is_empty() {
                            "none (nucleic project add)".into()
                        } else {
                            names.join(", ")
                        }
                    )));
                };
                state.project = Some(project.project_id.clone());
                self.state.set_chat(&key, &state)?;
                Ok(format!("New tasks go to project {}.", project.name).into())
            }
            Command::Sessions => {
                let mut sessions = self.client.list_sessions(state.project.clone(), false).await?;
                sessions.sort_by_key(|s| std::cmp::Reverse(s.updated_at));
                sessions.truncate(20);
                let mut lines: Vec<String> = sessions
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let (id, status) = (short(&s.session_id), s.status.as_str());
                        format!("{}. {id} {status} — {}", i + 1, s.title)
                    })
                    .collect();
                state.listing = sessions.iter().map(|s| s.session_id.clone()).collect();
                let (outside, shown) = self.outside_listing(&state, state.listing.len() + 1).await;
                if !shown.is_empty() {
                    lines.push("From outside Nucleic (carried on in a worktree of their own):".into());
                    lines.extend(shown);
                }
                state.listing.extend(outside);
                self.state.set_chat(&key, &state)?;
                if lines.is_empty() {
                    return Ok("No sessions yet: /cc <task> starts one.".into());
                }
                Ok(format!("{}\n/cc resume N picks one.", lines.join("\n")).into())
            }
            Command::Resume(n) => {
                let Some(session) = state.listing.get(n - 1).cloned() else {
                    return Err(Failure::Say(format!(
                        "No session {n} in the last /cc sessions list."
                    )));
                };
                if let Some(pick) = crate::outside::picked(&session) {
                    state.session = Some(session);
                    state.selected = true;
                    self.state.set_chat(&key, &state)?;
                    return Ok(format!(
                        "Session {n} ({}) is from outside Nucleic: your next /cc <task> or /cc say carries it on, as a Nucleic session in a worktree of its own.",
                        short(&pick.id)
                    )
                    .into());
                }
                let summary = self.client.session(&session).await?;
                self.select(chat, &mut state, &session, true)?;
                Ok(format!(
                    "Session {} ({}) selected: /cc <task> and /cc say go to it.",
                    short(&session),
                    summary.title
                )
                .into())
            }
            Command::NewSession(title) => {
                state.next_title = Some(title.clone());
                state.session = None;
                self.state.set_chat(&key, &state)?;
                Ok(format!("The next /cc <task> starts a new session titled {title:?}.").into())
            }
            Command::Session => {
                let session = current(&state)?;
                let s = self.client.session(&session).await?;
                Ok(crate::report::describe(&s).into())
            }
            Command::Diff => {
                let session = current(&state)?;
                let facts = self.client.git_facts(&session, false, None).await?;
                if facts.files.is_empty() {
                    return Ok(format!(
                        "Session {}: no changes vs {}.",
                        short(&session),
                        facts.base_branch
                    )
                    .into());
                }
                let lines: Vec<String> = facts
                    .files
                    .iter()
                    .map(|f| format!("{} {} +{} -{}", f.status, f.path, f.additions, f.deletions))
                    .collect();
                Ok(format!(
                    "Session {} vs {} ({} ahead, {} behind):\n{}",
                    short(&session),
                    facts.base_branch,
                    facts.ahead,
                    facts.behind,
                    lines.join("\n")
                )
                .into())
            }
            Command::Tests => {
                let session = current(&state)?;
                let intent = Intent::RunChecks { session_id: session.clone(), name: None };
                let run: nucleic_client::results::ChecksRun = self.client.intent_as(intent).await?;
                if run.checks.is_empty() {
                    return Ok(
                        "The project has no checks configured (nucleic project checks).".into()
                    );
                }
                let lines: Vec<String> = run
                    .checks
                    .iter()
                    .map(|c| {
                        let counts = match (c.passed, c.failed) {
                            (Some(p), Some(f)) => format!(" ({p} passed, {f} failed)"),
                            _ => String::new(),
                        };
                        format!("{}: {:?}{counts}", c.name, c.outcome)
                    })
                    .collect();
                Ok(lines.join("\n").into())
            }
            Command::Report => {
                let session = current(&state)?;
                let report: nucleic_protocol::Report =
                    self.client.intent_as(Intent::Report { session_id: session.clone() }).await?;
                Ok(crate::report::render_report(&session, &report).into())
            }
            Command::Keep => {
                let session = current(&state)?;
                self.finish(&session, FinishAction::Keep).await?;
                Ok(format!(
                    "Kept session {}: its worktree and branch stay as they are.",
                    short(&session)
                )
                .into())
            }
            Command::Rollback => {
                let session = current(&state)?;
                let armed =
                    state.rollback_armed_at.is_some_and(|at| now_ms() - at < CONFIRM_WINDOW_MS);
                if !armed {
                    state.rollback_armed_at = Some(now_ms());
                    self.state.set_chat(&key, &state)?;
                    return Ok(format!(
                        "Rollback deletes session {}'s worktree and branch, and its work with them. Send /cc rollback again within 2 minutes to confirm.",
                        short(&session)
                    )
                    .into());
                }
                state.rollback_armed_at = None;
                self.state.set_chat(&key, &state)?;
                self.finish(&session, FinishAction::Rollback { confirm: true }).await?;
                Ok(format!("Rolled back session {}: worktree and branch removed.", short(&session))
                    .into())
            }
            Command::Continue => {
                let session = current(&state)?;
                let prompt = "Continue from where the previous session left off.".to_owned();
                let result = self.finish(&session, FinishAction::Continue { prompt, backend: None }).await?;
                let next = if let Some(nucleic_protocol::IntentResult::Session(next)) = result {
                    Some(next.session_id)
                } else {
                    None
                };
                match next {
                    Some(next) => {
                        self.select(chat, &mut state, &next, true)?;
                        Ok(format!(
                            "Session {} continues {} on its changes.",
                            short(&next),
                            short(&session)
                        )
                        .into())
                    }
                    None => Ok(format!("Session {} continued.", short(&session)).into()),
                }
            }
            Command::Clear => {
                state.session = None;
                state.next_title = None;
                state.rollback_armed_at = None;
                self.state.set_chat(&key, &state)?;
                Ok("Cleared: the next /cc <task> starts a new session.".into())
            }
            Command::Handoff => {
                let session = current(&state)?;
                let intent = Intent::Finish { session_id: session, action: FinishAction::Handoff };
                let handoff: nucleic_client::results::Handoff =
                    self.client.intent_as(intent).await?;
                Ok(format!("To take the session over in a terminal:\n{}", handoff.command).into())
            }
            Command::Cancel => {
                let session = current(&state)?;
                self.client.intent(Intent::Interrupt { session_id: session.clone() }).await?;
                Ok(format!("Interrupted session {}'s turn.", short(&session)).into())
            }
            Command::Send(path) => {
                let session = current(&state)?;
                match self.send_file(chat, &session, &path).await? {
                    Ok(text) | Err(text) => Ok(text.into()),
                }
            }
            Command::NeedsYou(on) => {
                self.state.set_needs_you_only(chat, on)?;
                Ok(if on {
                    "This chat now gets \"needs you\" notices only: which session waits, and the code to answer, without the tool, command, plan or answer. /cc diff, report, tests, session(s), send and handoff are answered in the cockpit. /cc needs-you off brings the full reports back."
                } else {
                    "This chat gets the full reports again."
                }
                .into())
            }
            Command::Threads(_) if !self.transport.topics_need_asking() => Ok(
                "Here a session gets a topic of its own by itself, in a forum group; /cc threads is for Matrix rooms.".into(),
            ),
            Command::Threads(on) => {
                self.state.set_threads(chat, on)?;
                Ok(if on {
                    "Each new session of this room now reports in a thread of its own: answer its approvals there."
                } else {
                    "New sessions of this room report here again."
                }
                .into())
            }
            Command::Pair(_) => Ok("Already paired.".into()),
        }
    }

    async fn finish(
        &mut self,
        session: &str,
        action: FinishAction,
    ) -> Result<Option<nucleic_protocol::IntentResult>, Failure> {
        let intent = Intent::Finish { session_id: session.to_owned(), action };
        Ok(self.client.intent(intent).await?)
    }

    /// Which pending item `answer` means in `chat`: its code's, or the only one waiting.
    fn pick(&self, chat: &str, answer: &Answer, plan: bool) -> Result<Pending, Failure> {
        let key = chat.to_owned();
        if let Some(code) = &answer.code {
            return match self.state.pending_by_code(&key, code)? {
                None => Err(Failure::Say(format!("No approval or plan {code} in this chat."))),
                Some(p) if p.resolved_by.is_some() => Err(Failure::Say(format!(
                    "{} was already resolved (by {}).",
                    p.code,
                    p.resolved_by.as_deref().unwrap_or("someone")
                ))),
                Some(p) => Ok(p),
            };
        }
        let wanted = |p: &Pending| (p.kind == PendingKind::Plan) == plan;
        let open: Vec<Pending> =
            self.state.open_pending(&key)?.into_iter().filter(wanted).collect();
        match open.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Failure::Say(
                if plan {
                    "No plan waits in this chat."
                } else {
                    "No approval waits in this chat."
                }
                .into(),
            )),
            many => {
                let codes: Vec<&str> = many.iter().map(|p| p.code.as_str()).collect();
                Err(Failure::Say(format!(
                    "Several wait ({}): name one by its code.",
                    codes.join(", ")
                )))
            }
        }
    }

    async fn answer(
        &mut self,
        chat: &str,
        answer: Answer,
        verdict: Verdict,
        plan: bool,
    ) -> Result<Reply, Failure> {
        let pending = self.pick(chat, &answer, plan)?;
        let reason = answer.reason.clone();
        let (decision, confirmed) = match (pending.kind, verdict) {
            (PendingKind::Plan, Verdict::Yes) => {
                (Decision::ApprovePlan { mode: SessionMode::Edit }, false)
            }
            (PendingKind::Question, Verdict::Yes) => {
                return Err(Failure::Say(format!(
                    "{} is a question: answer it with its buttons.",
                    pending.code
                )));
            }
            (PendingKind::Approval, Verdict::Yes) if pending.is_critical() => {
                let armed =
                    pending.confirm_armed_at.is_some_and(|at| now_ms() - at < CONFIRM_WINDOW_MS);
                if !armed {
                    self.state.arm_confirm(&pending.code, Some(now_ms()))?;
                    let code = &pending.code;
                    return Ok(Reply {
                        text: format!(
                            "{code} is critical. Approve it again (/cc approve {code} or the button) within 2 minutes to allow it."
                        ),
                        buttons: vec![vec![Button {
                            label: format!("Confirm critical {code}"),
                            data: format!("a:{code}"),
                        }]],
                    });
                }
                (Decision::Allow, true)
            }
            (PendingKind::Approval, Verdict::Yes) => (Decision::Allow, false),
            (_, Verdict::No) => {
                let message = reason.unwrap_or_else(|| "Denied from chat.".to_owned());
                (Decision::Deny { message }, false)
            }
        };
        self.decide(&pending, decision, confirmed).await?;
        let what = match (pending.kind, verdict) {
            (PendingKind::Plan, Verdict::Yes) => "confirmed: the agent goes on in edit mode",
            (PendingKind::Plan, Verdict::No) => "rejected",
            (_, Verdict::Yes) => "approved",
            (_, Verdict::No) => "denied",
        };
        Ok(format!("{} {what}.", pending.code).into())
    }

    async fn answer_question(
        &mut self,
        chat: &str,
        code: &str,
        choice: Option<&str>,
    ) -> Result<Reply, Failure> {
        let answer = Answer { code: Some(code.to_owned()), reason: None };
        let pending = self.pick(chat, &answer, false)?;
        let index: usize = choice.and_then(|c| c.parse().ok()).unwrap_or(usize::MAX);
        let Some((question, label)) = crate::report::question_choice(&self.state, &pending, index)?
        else {
            return Err(Failure::Say(format!("{code}: no such choice.")));
        };
        let answers = vec![QuestionAnswer { question, choices: vec![label.clone()], other: None }];
        self.decide(&pending, Decision::Answer { answers }, false).await?;
        Ok(format!("{code} answered: {label}.").into())
    }

    async fn decide(
        &mut self,
        pending: &Pending,
        decision: Decision,
        confirmed: bool,
    ) -> Result<(), Failure> {
        match self.client.decide(&pending.session, &pending.request, decision, confirmed).await {
            Ok(_) => {
                self.answered_here.insert(pending.request.clone());
                self.state.resolve(&pending.session, &pending.request, "this chat")?;
                Ok(())
            }
            Err(ClientError::Rejected(r)) if r.code == Some(ProtocolErrorCode::AlreadyResolved) => {
                let by = r.resolved_by.unwrap_or_else(|| "someone else".into());
                self.state.resolve(&pending.session, &pending.request, &by)?;
                Err(Failure::Say(format!("{} was already resolved (by {by}).", pending.code)))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// What a chat is told when the host failed a request.
pub(crate) fn host_failure(e: &ClientError) -> String {
    match e {
        ClientError::Rejected(_)
        | ClientError::Unexpected { .. }
        | ClientError::BadResult { .. } => {
            format!("The host refused: {e}")
        }
        _ => format!("The host is not reachable right now; try again in a moment. ({e})"),
    }
}

fn current(state: &ChatState) -> Result<String, Failure> {
    if state.session.as_deref().and_then(crate::outside::picked).is_some() {
        return Err(Failure::Say(
            "The session picked is from outside Nucleic: /cc say <text> carries it on first."
                .into(),
        ));
    }
    state.session.clone().ok_or_else(|| {
        Failure::Say(
            "No session in this chat yet: /cc <task> starts one, /cc sessions lists them.".into(),
        )
    })
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().chars().take(190).collect()
}

/// How a command failed: the bridge's store (an error), the host (said), or a plain answer.
#[derive(Debug)]
pub(crate) enum Failure {
    Bridge(BridgeError),
    Host(ClientError),
    Say(String),
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Failure {
        Failure::Host(e)
    }
}

impl From<crate::state::StateError> for Failure {
    fn from(e: crate::state::StateError) -> Failure {
        Failure::Bridge(e.into())
    }
}

impl From<BridgeError> for Failure {
    fn from(e: BridgeError) -> Failure {
        Failure::Bridge(e)
    }
}
