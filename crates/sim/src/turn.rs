//! One turn: init, the planned message, permission checks, tool runs, final message, result.

use crate::inbox::UserMsg;
use crate::permissions::{self, Answer, Gate, Policy, REJECT_MESSAGE, STREAM_CLOSED};
use crate::planner::{self, Action};
use crate::session::{Session, Stop, sleep_forever};
use crate::stream::{Block, Streamed, TurnState};
use crate::tools::{self, BashRun, Outcome};
use crate::wire::{ResultLine, ToolResultLine, prefixed_id, uuid};
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

/// The synthetic text of the `api_error` fault (verbatim from the real CLI).
pub const API_ERROR_TEXT: &str = "API Error: 500 Internal server error. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:8765).";

/// How a permission check ended.
enum Verdict {
    /// Run this input; `modified` when the host changed it; `decision` for the meta.
    Run { input: Value, modified: bool, decision: Value },
    /// Refused with this message.
    Denied(String),
    /// Refused and the turn must stop (deny+interrupt, or an interrupt while asking).
    Abort,
}

impl<W: Write> Session<W> {
    /// Runs one turn for `msg`.
    pub(crate) fn turn(&mut self, msg: &UserMsg) -> Result<(), Stop> {
        let plan = planner::plan(&msg.text);
        let plan_claim = plan.claim.clone();
        let mut st = TurnState {
            started: Instant::now(),
            api_calls: 0,
            assistant_lines: 0,
            input_tokens: 100 + (msg.text.len() as u64).div_ceil(4),
            output_tokens: 0,
            slow: plan.slow,
            stream: plan.stream,
            fast: plan.fast,
            brisk: plan.brisk,
            denials: Vec::new(),
        };
        if self.faults.malformed_stdout {
            self.wire.raw("{this is not json\n")?;
        }
        let init = self.init_line();
        self.emit(&init)?;
        if self.faults.unknown_lines {
            self.emit(&json!({"type": "brand_new_kind", "x": 1}))?;
            let mystery = self.ctx.system("mystery", json!({}));
            self.emit(&mystery)?;
        }
        if self.faults.hang {
            return self.hang();
        }
        if self.faults.api_error {
            return self.api_error(&mut st);
        }

        let mut blocks = Vec::new();
        if plan.think {
            blocks.push(Block::Thinking(plan.thinking_text()));
        }
        let opening = plan.opening_text();
        blocks.push(Block::Text(opening.clone()));
        let calls: Vec<(String, &'static str, Value)> = plan
            .actions
            .iter()
            .map(|a| (prefixed_id("toolu_"), a.tool_name(), self.tool_input(a)))
            .collect();
        for (id, name, input) in &calls {
            blocks.push(Block::ToolUse {
                id: id.clone(),
                name: (*name).to_owned(),
                input: input.clone(),
            });
        }
        let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
        let streamed = self.stream_message(&mut st, &blocks, stop)?;
        st.stream = None;
        if streamed == Streamed::Aborted {
            return self.finish_aborted(&st, "aborted_streaming");
        }
        if calls.is_empty() {
            return self.finish_ok(&st, opening);
        }

        for (id, name, input) in &calls {
            self.drain()?;
            if self.interrupted {
                self.emit_tool_result(id, denied(REJECT_MESSAGE), reject())?;
                return self.abort_tools(&st);
            }
            match self.check_permission(&mut st, id, name, input)? {
                Verdict::Abort => {
                    self.emit_tool_result(id, denied(REJECT_MESSAGE), reject())?;
                    return self.abort_tools(&st);
                }
                Verdict::Denied(message) => {
                    self.emit_tool_result(id, denied(&message), reject())?;
                }
                Verdict::Run { input, modified, decision } => {
                    let Some(outcome) = self.execute(name, &input, modified)? else {
                        let outcome = denied("[Request interrupted by user for tool use]");
                        self.emit_tool_result(id, outcome, decision)?;
                        return self.abort_tools(&st);
                    };
                    self.emit_tool_result(id, outcome, decision)?;
                }
            }
        }

        let denied = st.denials.len();
        let done = if denied == 0 {
            plan_claim.map_or_else(|| "Done.".to_owned(), |c| format!("Done. {c}"))
        } else {
            let names: Vec<&str> =
                st.denials.iter().filter_map(|d| d["tool_name"].as_str()).collect();
            format!("Done, with {denied} denied. Denied: {}.", names.join(", "))
        };
        if self.stream_message(&mut st, &[Block::Text(done.clone())], "end_turn")?
            == Streamed::Aborted
        {
            return self.finish_aborted(&st, "aborted_streaming");
        }
        self.finish_ok(&st, done)
    }

    /// The tool input for an action; file paths become absolute under cwd.
    fn tool_input(&self, action: &Action) -> Value {
        let abs = |p: &str| tools::absolute(&self.cwd, p).to_string_lossy().into_owned();
        match action {
            Action::Write { path, content } => json!({"file_path": abs(path), "content": content}),
            Action::Edit { path, old, new } => {
                json!({"file_path": abs(path), "old_string": old, "new_string": new, "replace_all": false})
            }
            Action::Bash { command } => {
                json!({"command": command, "description": format!("Run {command}")})
            }
            // Claude Code puts the plan file's text in `plan`; without one the input is `{}`.
            Action::Plan { plan } if plan.trim().is_empty() => json!({}),
            Action::Plan { plan } => json!({"plan": plan}),
            Action::Ask { question, options, multi_select } => json!({"questions": [{
                "question": question,
                "header": question.chars().take(12).collect::<String>(),
                "options": options.iter().map(|o| json!({"label": o, "description": ""})).collect::<Vec<_>>(),
                "multiSelect": multi_select,
            }]}),
        }
    }

    fn check_permission(
        &mut self,
        st: &mut TurnState,
        id: &str,
        name: &str,
        input: &Value,
    ) -> Result<Verdict, Stop> {
        let gate = Policy {
            mode: &self.mode,
            rules: &self.rules,
            prompt_tool: self.args.permission_prompt_tool.as_deref(),
            stream_input: self.args.stream_input(),
        }
        .gate(name, input);
        let deny = |st: &mut TurnState, message: String| {
            st.denials.push(json!({"tool_name": name, "tool_use_id": id, "tool_input": input}));
            Verdict::Denied(message)
        };
        match gate {
            Gate::Allow(decision) => {
                Ok(Verdict::Run { input: input.clone(), modified: false, decision })
            }
            Gate::Deny { message, announce, reason_type } => {
                if announce {
                    let mut fields =
                        json!({"tool_name": name, "tool_use_id": id, "message": message});
                    if let Some(r) = reason_type {
                        fields["decision_reason_type"] = json!(r);
                    }
                    let line = self.ctx.system("permission_denied", fields);
                    self.emit(&line)?;
                }
                Ok(deny(st, message))
            }
            Gate::Ask => {
                if self.eof {
                    return Ok(deny(st, STREAM_CLOSED.to_owned()));
                }
                let request_id = uuid();
                let line =
                    permissions::can_use_tool(&request_id, name, input, id, &self.cwd, &self.mode);
                self.pending = Some(request_id);
                self.answer = None;
                self.emit(&line)?;
                let response = loop {
                    if let Some(answer) = self.answer.take() {
                        break answer;
                    }
                    if self.interrupted {
                        self.pending = None;
                        return Ok(Verdict::Abort);
                    }
                    if self.eof {
                        if self.faults.ignore_stdin_eof {
                            // An agent that outlives its host: keep waiting for an answer.
                            crate::session::sleep_forever();
                        }
                        self.pending = None;
                        return Ok(deny(st, STREAM_CLOSED.to_owned()));
                    }
                    self.pump(None)?;
                };
                match permissions::parse_answer(&response) {
                    Answer::Deny { interrupt: true, .. } => {
                        st.denials.push(
                            json!({"tool_name": name, "tool_use_id": id, "tool_input": input}),
                        );
                        Ok(Verdict::Abort)
                    }
                    Answer::Deny { message, .. } => Ok(deny(st, message)),
                    Answer::Allow { updated_input, updated_permissions } => {
                        let (rules, mode) = permissions::apply_updates(&updated_permissions);
                        self.rules.extend(rules);
                        if let Some(mode) = mode {
                            self.set_mode(&mode)?;
                        }
                        let source = if updated_permissions.is_empty() {
                            "user_temporary"
                        } else {
                            "user_permanent"
                        };
                        let decision = json!({"decision": "accept", "source": source});
                        let modified = updated_input.as_ref().is_some_and(|u| u != input);
                        let input = updated_input.unwrap_or_else(|| input.clone());
                        Ok(Verdict::Run { input, modified, decision })
                    }
                }
            }
        }
    }

    /// Runs a tool. `None` when an interrupt killed it.
    fn execute(
        &mut self,
        name: &str,
        input: &Value,
        modified: bool,
    ) -> Result<Option<Outcome>, Stop> {
        match name {
            "Write" => Ok(Some(tools::write(&self.cwd, input, modified))),
            "Edit" => Ok(Some(tools::edit(&self.cwd, input, modified))),
            "ExitPlanMode" => {
                if self.mode == "plan" {
                    self.set_mode("default")?;
                }
                Ok(Some(tools::plan_approved(input)))
            }
            "AskUserQuestion" => Ok(Some(tools::questions_answered(input))),
            _ => {
                let mut run = match BashRun::start(&self.cwd, input) {
                    Ok(run) => run,
                    Err(outcome) => return Ok(Some(outcome)),
                };
                loop {
                    if let Some(outcome) = run.try_finish() {
                        return Ok(Some(outcome));
                    }
                    self.wait(Duration::from_millis(10))?;
                    if self.interrupted {
                        run.kill();
                        return Ok(None);
                    }
                }
            }
        }
    }

    fn emit_tool_result(
        &mut self,
        id: &str,
        outcome: Outcome,
        decision: Value,
    ) -> Result<(), Stop> {
        let line = self.ctx.user_tool_result(&ToolResultLine {
            tool_use_id: id.to_owned(),
            content: outcome.content,
            is_error: outcome.is_error,
            tool_use_result: outcome.tool_use_result,
            decision,
        });
        self.emit(&line)
    }

    fn result_line(&self, st: &TurnState) -> ResultLine {
        ResultLine {
            subtype: "success",
            is_error: false,
            result: None,
            num_turns: st.api_calls,
            usage: (st.input_tokens * st.api_calls, st.output_tokens),
            permission_denials: st.denials.clone(),
            terminal_reason: "completed",
            stop_reason: Some("end_turn"),
            api_error_status: None,
            duration_ms: st.started.elapsed().as_millis() as u64,
            errors: Vec::new(),
            result_index: self.results,
        }
    }

    fn finish_ok(&mut self, st: &TurnState, text: String) -> Result<(), Stop> {
        let r = ResultLine { result: Some(text), ..self.result_line(st) };
        let line = self.ctx.result(&r);
        self.emit_result(&line)
    }

    fn finish_aborted(
        &mut self,
        st: &TurnState,
        terminal_reason: &'static str,
    ) -> Result<(), Stop> {
        let r = ResultLine {
            subtype: "error_during_execution",
            is_error: true,
            terminal_reason,
            stop_reason: None,
            errors: vec![
                "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null".into(),
            ],
            ..self.result_line(st)
        };
        let line = self.ctx.result(&r);
        self.emit_result(&line)
    }

    fn abort_tools(&mut self, st: &TurnState) -> Result<(), Stop> {
        let line = self.ctx.user_text("[Request interrupted by user for tool use]");
        self.emit(&line)?;
        self.finish_aborted(st, "aborted_tools")
    }

    /// The `hang` fault: answer control requests forever, never finish the turn.
    fn hang(&mut self) -> Result<(), Stop> {
        loop {
            if self.eof {
                sleep_forever();
            }
            self.pump(None)?;
        }
    }

    /// The `api_error` fault: one retry notice, the synthetic error message, an error result.
    fn api_error(&mut self, st: &mut TurnState) -> Result<(), Stop> {
        let retry = self.ctx.system(
            "api_retry",
            json!({"attempt": 1, "max_retries": 1, "retry_delay_ms": 10, "error_status": 500, "error": "server_error"}),
        );
        self.emit(&retry)?;
        self.wait(Duration::from_millis(10))?;
        let line = self.ctx.api_error_assistant(API_ERROR_TEXT);
        self.emit(&line)?;
        if self.faults.crash_mid_turn {
            return Err(Stop(3));
        }
        st.api_calls = 1;
        let r = ResultLine {
            is_error: true,
            result: Some(API_ERROR_TEXT.to_owned()),
            terminal_reason: "api_error",
            stop_reason: Some("stop_sequence"),
            api_error_status: Some(500),
            ..self.result_line(st)
        };
        let line = self.ctx.result(&r);
        self.emit_result(&line)
    }
}

/// A refused call: the message as is (no `<tool_use_error>` wrapper), `is_error`.
fn denied(message: &str) -> Outcome {
    Outcome {
        content: message.to_owned(),
        is_error: true,
        tool_use_result: json!(format!("Error: {message}")),
    }
}

fn reject() -> Value {
    json!({"decision": "reject", "source": "user_reject"})
}
