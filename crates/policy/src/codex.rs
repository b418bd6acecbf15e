//! Codex's approval requests mapped onto the same evaluation as Claude Code's tool calls.
//!
//! `item/commandExecution/requestApproval` carries `command` (a string such as
//! `/bin/bash -lc 'touch x'`; older requests an argv) and `cwd`; `item/fileChange/requestApproval`
//! refers to a file-change item whose paths the host knows from `item/started`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::context::Context;
use crate::evaluate::Decision;
use crate::policy::Policy;
use crate::rule::Behaviour;

/// The name Codex's file-change tool goes by in approvals (`apply_patch`).
pub const PATCH_TOOL: &str = "apply_patch";

/// The command of a Codex command approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodexCommand {
    /// A command line as Codex shows it (`/bin/bash -lc '…'`).
    Line(String),
    /// An argv, run without a shell.
    Argv(Vec<String>),
}

impl CodexCommand {
    /// The command as one shell line (an argv is quoted word by word).
    pub fn to_line(&self) -> String {
        match self {
            Self::Line(line) => line.clone(),
            Self::Argv(argv) => argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "),
        }
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty()
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Every path a Codex patch (`apply_patch`'s `changes`) writes, relative ones joined to `cwd`:
/// each change's `path` and where an update moves the file to (`kind.move_path`), in the
/// list form (`[{path, kind: {type, move_path}}]`) and the older map form (`{path: {…}}`).
pub fn patch_paths(input: &Value, cwd: &Path) -> Vec<PathBuf> {
    let moved = |change: &Value| -> Option<String> {
        [change.get("kind"), Some(change)]
            .into_iter()
            .flatten()
            .find_map(|v| {
                ["move_path", "movePath"].iter().find_map(|k| v.get(*k).and_then(Value::as_str))
            })
            .map(str::to_owned)
    };
    let mut paths: Vec<String> = Vec::new();
    match input.get("changes") {
        Some(Value::Array(changes)) => {
            for c in changes {
                paths.extend(c.get("path").and_then(Value::as_str).map(str::to_owned));
                paths.extend(moved(c));
            }
        }
        Some(Value::Object(map)) => {
            for (path, c) in map {
                paths.push(path.clone());
                paths.extend(moved(c));
            }
        }
        _ => {}
    }
    paths.into_iter().map(|p| cwd.join(p)).collect()
}

impl Policy {
    /// Decides a Codex patch (`apply_patch` with its `changes`): every path it writes, moves
    /// included, as a `Write`.
    pub fn evaluate_codex_patch(&self, input: &Value, ctx: &Context<'_>) -> Decision {
        self.evaluate_codex_file_change(&patch_paths(input, &ctx.cwd), ctx)
    }

    /// Decides a Codex command approval: evaluated as a `Bash` call run in `cwd`
    /// (`bash -lc '…'` is looked through like any `bash -c`).
    pub fn evaluate_codex_command(
        &self,
        command: &CodexCommand,
        cwd: Option<PathBuf>,
        ctx: &Context<'_>,
    ) -> Decision {
        let input = json!({ "command": command.to_line() });
        match cwd {
            Some(cwd) => {
                let ctx = Context { cwd, ..ctx.clone_ref() };
                self.evaluate("Bash", &input, &ctx)
            }
            None => self.evaluate("Bash", &input, ctx),
        }
    }

    /// Decides a Codex file change: every path is evaluated as a `Write`; the strictest
    /// decision wins (deny > ask > allow), as for a compound command.
    pub fn evaluate_codex_file_change(&self, paths: &[PathBuf], ctx: &Context<'_>) -> Decision {
        let mut worst: Option<Decision> = None;
        for path in paths {
            let decision = self.evaluate("Write", &json!({ "file_path": path }), ctx);
            if worst
                .as_ref()
                .is_none_or(|w| (decision.behaviour, decision.risk) > (w.behaviour, w.risk))
            {
                worst = Some(decision);
            }
        }
        worst.unwrap_or_else(|| Decision {
            behaviour: Behaviour::Ask,
            by: format!("mode:{}", ctx.mode.as_str()),
            reason: "The file change names no paths; a person decides.".into(),
            risk: crate::risk::Risk::Medium,
            risk_reasons: vec!["unknown file change".into()],
        })
    }
}
