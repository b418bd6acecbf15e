//! The simulated agent: a fake `claude` speaking Claude Code's stream-json and stdio control protocol with no model.
//!
//! The host starts it with the same argv as the real CLI, for example
//! `-p --output-format stream-json --input-format stream-json --verbose
//! --permission-mode default --permission-prompt-tool stdio --include-partial-messages`,
//! writes `user` / `control_request` / `control_response` lines to its stdin and reads one
//! JSON object per line from its stdout, exactly as with Claude Code 2.1.332.
//!
//! # Prompt grammar
//!
//! The planner reads the text of each user message (keywords are case-insensitive):
//!
//! ```text
//! prompt  := step (" then " step)*
//! step    := filler* action | anything-else          (non-actions are ignored)
//! filler  := "please" | "think" | "slow" | "and" | "then" | "now" | "first" | "also"
//! action  := ("write" | "create") PATH ["containing" TEXT]   -> Write {file_path, content}
//!          | "edit" PATH ":" OLD "->" NEW                     -> Edit {file_path, old_string, new_string, replace_all:false}
//!          | "run" COMMAND | "bash:" COMMAND | "bash" COMMAND -> Bash {command, description}
//!          | "say" TEXT                                       -> no tool: the final message is
//!                                                                "Done. TEXT" (a claim to test
//!                                                                reports against)
//! ```
//!
//! * `PATH` is one word (quotes and trailing `.,;:!?` stripped), relative to the cwd; the
//!   tool input carries it as an absolute path. Paths resolving outside the cwd are refused
//!   when the tool runs (error tool_result).
//! * `TEXT` is the rest of the step; `\n` and `\t` escapes are expanded and a final newline
//!   is added if missing. Without `containing` the content is `"hello\n"`.
//! * The word `think` anywhere adds a thinking block first; the word `slow` anywhere makes
//!   the agent sleep 200 ms between stream chunks (for interrupt tests).
//! * `stream N` anywhere opens the reply with a long narration streamed as N text deltas,
//!   one every 250 ms (`stream 2400` streams for ten minutes; demos and reconnect tests); with
//!   the word `fast` too, without pauses (`stream 20000 fast`: a long transcript in seconds);
//!   with `brisk`, one every 25 ms (a model's token pace, for latency benches).
//! * All tool calls of a prompt go in one assistant message (one `assistant` line per block,
//!   sharing `message.id`), after a text block "I'll write a.txt. Then I'll run `ls`.".
//!   After the tool results comes a final message "Done." (or "Done, with N denied.
//!   Denied: Write.") and the `result`.
//! * A prompt with no action gets the reply `Simulated agent here. You said: <prompt>.
//!   Try: write notes.txt containing hi`.
//!
//! Examples: `write notes.txt containing hi`, `Please create a/b.md`,
//! `edit notes.txt: hi -> hello`, `run ls -la`, `think, then write a.txt then bash: cat a.txt`.
//!
//! # Faults
//!
//! `NUCLEIC_SIM_FAULT` holds a comma list: `crash_mid_turn`, `malformed_stdout`,
//! `unknown_lines`, `hang`, `api_error`, `ignore_stdin_eof`, `fork_on_resume` (see
//! [`faults::Faults`]).
//!
//! # Modules
//!
//! It runs as `nucleic __sim-agent` and as the `fake-claude` binary.
//!
//! - [`args`]: the subset of the real `claude` command line it honours.
//! - [`inbox`]: stdin: a reader thread feeding a channel, each input line classified.
//! - [`session`]: the main loop: session state, stdin pumping, control requests, turn scheduling.
//! - [`planner`]: a prompt turned into its deterministic list of actions (the grammar above).
//! - `turn`: one turn: init, the planned message, permission checks, tool runs, final message,
//!   result.
//! - [`permissions`]: which tool calls need asking, the `can_use_tool` request, the host's answers.
//! - [`tools`]: Write, Edit and Bash really run, confined to the working directory.
//! - [`stream`]: one simulated API message streamed: `stream_event` lines, per-block `assistant`
//!   lines, aborts.
//! - [`wire`]: the stdout JSON lines (shapes copied from Claude Code 2.1.332).
//! - [`faults`]: fault injection (`NUCLEIC_SIM_FAULT`).

pub mod args;
pub mod faults;
pub mod inbox;
pub mod permissions;
pub mod planner;
pub mod session;
pub mod stream;
pub mod tools;
mod turn;
pub mod wire;

use args::Command;
use faults::Faults;
use inbox::{Raw, UserMsg};
use serde_json::json;
use session::Session;
use std::io::{BufRead, Write};
use std::path::Path;

/// The text printed by `--version`.
pub const VERSION_TEXT: &str = "0.1.0 (Nucleic simulated agent)";

/// Runs the simulated agent on the real stdin/stdout in the current directory and returns
/// the exit code. `args` excludes the program name.
pub fn run_cli(args: Vec<String>) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("Error: cannot read the current directory: {e}");
            return 1;
        }
    };
    run_with_faults(
        &args,
        std::io::BufReader::new(std::io::stdin()),
        std::io::stdout(),
        &cwd,
        Faults::from_env(),
    )
}

/// Runs the simulated agent with faults from `NUCLEIC_SIM_FAULT`. See [`run_with_faults`].
pub fn run<R, W>(args: &[String], input: R, output: W, cwd: &Path) -> i32
where
    R: BufRead + Send + 'static,
    W: Write,
{
    run_with_faults(args, input, output, cwd, Faults::from_env())
}

/// Runs the simulated agent: reads `input` (on a helper thread), writes protocol lines to
/// `output`, executes tools in `cwd`, and returns the exit code. Diagnostics go to stderr.
///
/// The `hang` and `ignore_stdin_eof` faults never return.
pub fn run_with_faults<R, W>(
    args: &[String],
    input: R,
    mut output: W,
    cwd: &Path,
    faults: Faults,
) -> i32
where
    R: BufRead + Send + 'static,
    W: Write,
{
    let args = match args::parse(args) {
        Ok(Command::Version) => return print_line(&mut output, VERSION_TEXT),
        Ok(Command::Help) => return print_line(&mut output, args::HELP.trim_end()),
        Ok(Command::Run(a)) => *a,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    if let Err(e) = args.validate() {
        eprintln!("{e}");
        return 1;
    }
    for flag in &args.unknown_flags {
        eprintln!("nucleic-sim: ignoring unsupported option {flag}");
    }

    let session_id = match (&args.session_id, &args.resume) {
        (Some(id), _) => id.clone(),
        (None, Some(id)) if id == "missing" || uuid::Uuid::parse_str(id).is_err() => {
            return no_conversation(&mut output, id);
        }
        (None, Some(_)) if args.fork_session || faults.fork_on_resume => wire::uuid(),
        (None, Some(id)) => id.clone(),
        (None, None) => wire::uuid(),
    };

    let stream_input = args.stream_input();
    let positional = args.prompt.clone();
    let (rx, queued) = if stream_input {
        (inbox::spawn_reader(input), None)
    } else {
        // Text input: one turn from the positional prompt or all of stdin, then EOF.
        let text = match positional {
            Some(p) => p,
            None => {
                let mut s = String::new();
                let mut input = input;
                let _ = input.read_to_string(&mut s);
                s
            }
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let _ = tx.send(Raw::Eof);
        let message = json!({"role": "user", "content": text});
        (rx, Some(UserMsg { text, message }))
    };
    let mut session = Session::new(args, faults, cwd.to_path_buf(), rx, output, session_id);
    if let Some(msg) = queued {
        session.enqueue(msg);
    }
    session.run()
}

fn print_line<W: Write>(out: &mut W, text: &str) -> i32 {
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

/// `--resume` with an unknown id: an error result, the real stderr line, exit 1.
fn no_conversation<W: Write>(out: &mut W, id: &str) -> i32 {
    eprintln!("No conversation found with session ID: {id}");
    let ctx = wire::Ctx { session_id: wire::uuid(), model: session::DEFAULT_MODEL.into() };
    let line = ctx.result(&wire::ResultLine {
        subtype: "error_during_execution",
        is_error: true,
        result: None,
        num_turns: 0,
        usage: (0, 0),
        permission_denials: Vec::new(),
        terminal_reason: "completed",
        stop_reason: None,
        api_error_status: None,
        duration_ms: 0,
        errors: vec![format!("No conversation found with session ID: {id}")],
        result_index: 0,
    });
    let _ = wire::Wire::new(out).emit(&line);
    1
}
