//! The main loop: session state, stdin pumping, control requests, and turn scheduling.

use crate::args::{Args, PERMISSION_MODES};
use crate::faults::Faults;
use crate::inbox::{Input, Raw, UserMsg, classify};
use crate::permissions::Rule;
use crate::wire::{Ctx, SIM_VERSION, Wire, control_err, control_ok};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// The model reported when `--model` is not given.
pub const DEFAULT_MODEL: &str = "claude-sim-1";

/// Ends the process with this exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop(pub i32);

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Self {
        // stdout is gone (host closed the pipe): nothing more can be said.
        Self(1)
    }
}

/// One simulated agent process.
#[derive(Debug)]
pub struct Session<W: Write> {
    pub(crate) wire: Wire<W>,
    pub(crate) ctx: Ctx,
    pub(crate) args: Args,
    pub(crate) faults: Faults,
    pub(crate) cwd: PathBuf,
    rx: Receiver<Raw>,
    pub(crate) mode: String,
    pub(crate) rules: Vec<Rule>,
    queue: VecDeque<UserMsg>,
    /// Stdin has ended.
    pub(crate) eof: bool,
    /// An interrupt arrived during the current turn.
    pub(crate) interrupted: bool,
    in_turn: bool,
    /// The request_id of our pending can_use_tool request.
    pub(crate) pending: Option<String>,
    /// The host's answer to `pending`, once it arrives.
    pub(crate) answer: Option<Value>,
    last_is_error: bool,
    pub(crate) results: u64,
}

impl<W: Write> Session<W> {
    /// Creates a session reading classified input from `rx`.
    pub fn new(
        args: Args,
        faults: Faults,
        cwd: PathBuf,
        rx: Receiver<Raw>,
        out: W,
        session_id: String,
    ) -> Self {
        let model = args.model.clone().unwrap_or_else(|| DEFAULT_MODEL.to_owned());
        let mode = args.mode().to_owned();
        let rules = args.allowed_tools.iter().map(|s| Rule::parse(s)).collect();
        Self {
            wire: Wire::new(out),
            ctx: Ctx { session_id, model },
            args,
            faults,
            cwd,
            rx,
            mode,
            rules,
            queue: VecDeque::new(),
            eof: false,
            interrupted: false,
            in_turn: false,
            pending: None,
            answer: None,
            last_is_error: false,
            results: 0,
        }
    }

    /// Queues a user message (text-input mode).
    pub fn enqueue(&mut self, msg: UserMsg) {
        self.queue.push_back(msg);
    }

    /// Writes one line.
    pub(crate) fn emit(&mut self, value: &Value) -> Result<(), Stop> {
        Ok(self.wire.emit(value)?)
    }

    /// Records a `result` line's outcome (the exit code follows the last one).
    pub(crate) fn emit_result(&mut self, line: &Value) -> Result<(), Stop> {
        self.last_is_error = line["is_error"].as_bool().unwrap_or(false);
        self.results += 1;
        self.emit(line)
    }

    /// Runs until stdin ends (exit code of the last result) or a fatal error.
    pub fn run(&mut self) -> i32 {
        match self.main_loop() {
            Ok(()) => i32::from(self.last_is_error),
            Err(Stop(code)) => code,
        }
    }

    fn main_loop(&mut self) -> Result<(), Stop> {
        loop {
            if let Some(msg) = self.queue.pop_front() {
                self.in_turn = true;
                self.interrupted = false;
                let outcome = self.turn(&msg);
                self.in_turn = false;
                self.pending = None;
                self.answer = None;
                outcome?;
                continue;
            }
            if self.eof {
                if self.faults.ignore_stdin_eof {
                    sleep_forever();
                }
                return Ok(());
            }
            self.pump(None)?;
        }
    }

    /// Handles at most one input: blocks for up to `timeout` (`None` = until something
    /// arrives). Returns false when nothing arrived in time.
    pub(crate) fn pump(&mut self, timeout: Option<Duration>) -> Result<bool, Stop> {
        if self.eof {
            return Ok(false);
        }
        let raw = match timeout {
            None => self.rx.recv().unwrap_or(Raw::Eof),
            Some(t) if t.is_zero() => match self.rx.try_recv() {
                Ok(raw) => raw,
                Err(TryRecvError::Empty) => return Ok(false),
                Err(TryRecvError::Disconnected) => Raw::Eof,
            },
            Some(t) => match self.rx.recv_timeout(t) {
                Ok(raw) => raw,
                Err(RecvTimeoutError::Timeout) => return Ok(false),
                Err(RecvTimeoutError::Disconnected) => Raw::Eof,
            },
        };
        match raw {
            Raw::Eof => self.eof = true,
            Raw::Line(line) => self.handle_line(&line)?,
        }
        Ok(true)
    }

    /// Handles everything already waiting on stdin without blocking.
    pub(crate) fn drain(&mut self) -> Result<(), Stop> {
        while self.pump(Some(Duration::ZERO))? {}
        Ok(())
    }

    /// Waits `dur` while still handling input; returns early on interrupt.
    pub(crate) fn wait(&mut self, dur: Duration) -> Result<(), Stop> {
        let deadline = Instant::now() + dur;
        loop {
            let now = Instant::now();
            if self.interrupted || now >= deadline {
                return Ok(());
            }
            if self.eof {
                std::thread::sleep(deadline - now);
                return Ok(());
            }
            self.pump(Some(deadline - now))?;
        }
    }

    fn handle_line(&mut self, line: &str) -> Result<(), Stop> {
        let input = classify(line).map_err(|err| {
            eprintln!("{err}");
            Stop(1)
        })?;
        match input {
            Input::User(msg) => {
                if self.args.replay_user_messages {
                    let echo = json!({
                        "type": "user",
                        "message": msg.message,
                        "session_id": self.ctx.session_id,
                        "parent_tool_use_id": null,
                        "uuid": crate::wire::uuid(),
                        "timestamp": crate::wire::timestamp(),
                        "isReplay": true,
                    });
                    self.emit(&echo)?;
                }
                self.queue.push_back(msg);
            }
            Input::ControlRequest { request_id, request } => {
                self.control_request(&request_id, &request)?
            }
            Input::ControlResponse(response) => {
                let id = response.get("request_id").and_then(Value::as_str);
                if id.is_some() && id == self.pending.as_deref() {
                    self.pending = None;
                    self.answer = Some(response);
                }
                // Anything else (stale or unknown request_id) is dropped silently.
            }
            Input::Ignored => {}
        }
        Ok(())
    }

    fn control_request(&mut self, id: &Value, request: &Value) -> Result<(), Stop> {
        let subtype = request.get("subtype").and_then(Value::as_str).unwrap_or("undefined");
        let line = match subtype {
            "initialize" => control_ok(id, self.initialize_response()),
            "interrupt" => {
                if self.in_turn {
                    self.interrupted = true;
                }
                control_ok(id, json!({"still_queued": []}))
            }
            "set_permission_mode" => {
                let mode = request.get("mode").and_then(Value::as_str).unwrap_or_default();
                if !PERMISSION_MODES.contains(&mode) {
                    let msg = format!("Invalid permission mode: {mode}");
                    return self.emit(&control_err(id, &msg, "invalid_request"));
                }
                self.emit(&control_ok(id, json!({"mode": mode})))?;
                return self.set_mode(mode);
            }
            "set_model" => {
                let model = request.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL);
                let model = if model == "default" { DEFAULT_MODEL } else { model };
                self.ctx.model = model.to_owned();
                control_ok(id, json!({"model": model}))
            }
            "mcp_status" => control_ok(id, json!({"mcpServers": []})),
            other => control_err(
                id,
                &format!("Unsupported control request subtype: {other}"),
                "unsupported_request",
            ),
        };
        self.emit(&line)
    }

    /// Changes the permission mode and announces it with `system/status`.
    pub(crate) fn set_mode(&mut self, mode: &str) -> Result<(), Stop> {
        self.mode = mode.to_owned();
        let status = self
            .ctx
            .system("status", json!({"status": null, "permissionMode": self.reported_mode()}));
        self.emit(&status)
    }

    /// The mode as the real CLI reports it (`manual` shows as `default`).
    pub(crate) fn reported_mode(&self) -> &str {
        if self.mode == "manual" { "default" } else { &self.mode }
    }

    fn initialize_response(&self) -> Value {
        json!({
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [{
                "value": "default",
                "resolvedModel": DEFAULT_MODEL,
                "displayName": "Default (simulated)",
                "description": "Nucleic simulated agent · no model, no cost",
                "supportsEffort": false,
                "supportsAdaptiveThinking": false,
                "supportsFastMode": false,
                "supportsAutoMode": false,
            }],
            "account": {"tokenSource": "none", "apiKeySource": "none", "apiProvider": "firstParty"},
            "pid": std::process::id(),
            "claude_code_version": SIM_VERSION,
            "current_permission_mode": self.reported_mode(),
            "session_state": if self.in_turn { "running" } else { "idle" },
            "capabilities": [],
        })
    }

    /// The `system/init` line for a turn.
    pub(crate) fn init_line(&self) -> Value {
        let mut tools = vec!["Task"];
        if self.args.permission_prompt_tool.is_some() {
            tools.push("AskUserQuestion");
        }
        tools.extend(["Bash", "Edit"]);
        if self.args.permission_prompt_tool.is_some() {
            tools.extend(["EnterPlanMode", "ExitPlanMode"]);
        }
        tools.extend(["Glob", "Grep", "Read", "TodoWrite", "WebFetch", "WebSearch", "Write"]);
        let cwd = self.cwd.to_string_lossy();
        self.ctx.system(
            "init",
            json!({
                "cwd": cwd,
                "tools": tools,
                "mcp_servers": [],
                "model": self.ctx.model,
                "permissionMode": self.reported_mode(),
                "slash_commands": [],
                "terminal_slash_commands": [],
                "apiKeySource": "none",
                "claude_code_version": SIM_VERSION,
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
                "capabilities": [],
                "analytics_disabled": true,
                "product_feedback_disabled": true,
                "served_by_anthropic": false,
                "sandbox_enabled": false,
                "memory_paths": {},
                "original_cwd": cwd,
                "additional_directories": [],
                "fast_mode_state": "off",
            }),
        )
    }
}

/// Blocks the calling thread forever (hang / ignore_stdin_eof faults).
pub(crate) fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
