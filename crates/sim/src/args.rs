//! Argv parsing: the subset of the real `claude` command line the simulated agent honours.

/// Permission modes the real CLI accepts for `--permission-mode`.
pub const PERMISSION_MODES: &[&str] =
    &["default", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"];

/// Flags that take exactly one value.
const VALUE_FLAGS: &[&str] = &[
    "--model",
    "--resume",
    "-r",
    "--session-id",
    "--append-system-prompt",
    "--append-system-prompt-file",
    "--system-prompt",
    "--system-prompt-file",
    "--permission-mode",
    "--permission-prompt-tool",
    "--permission-prompts",
    "--output-format",
    "--input-format",
    "--settings",
    "--setting-sources",
    "--max-turns",
    "--max-budget-usd",
    "--max-thinking-tokens",
    "--debug-file",
    "--fallback-model",
    "--agents",
    "--agent",
    "--effort",
    "--json-schema",
    "--name",
];

/// Flags that take one or more values (commander "variadic" options in the real CLI).
const LIST_FLAGS: &[&str] = &[
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--disallowed-tools",
    "--tools",
    "--mcp-config",
    "--add-dir",
    "--betas",
    "--plugin-dir",
];

/// Flags without a value.
const BOOL_FLAGS: &[&str] = &[
    "-p",
    "--print",
    "--verbose",
    "--include-partial-messages",
    "--fork-session",
    "--strict-mcp-config",
    "--continue",
    "-c",
    "--replay-user-messages",
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
    "--no-session-persistence",
    "--debug",
    "-d",
    "--ide",
];

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `--version` / `-v`.
    Version,
    /// `--help` / `-h`.
    Help,
    /// Run the agent.
    Run(Box<Args>),
}

/// Parsed options for a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// `-p` / `--print`.
    pub print: bool,
    /// `--output-format`.
    pub output_format: Option<String>,
    /// `--input-format`.
    pub input_format: Option<String>,
    /// `--verbose`.
    pub verbose: bool,
    /// `--permission-mode` (or `bypassPermissions` from `--dangerously-skip-permissions`).
    pub permission_mode: Option<String>,
    /// `--permission-prompt-tool`.
    pub permission_prompt_tool: Option<String>,
    /// `--include-partial-messages`.
    pub include_partial_messages: bool,
    /// `--replay-user-messages`.
    pub replay_user_messages: bool,
    /// `--model`.
    pub model: Option<String>,
    /// `--resume` / `-r`.
    pub resume: Option<String>,
    /// `--fork-session`.
    pub fork_session: bool,
    /// `--session-id`.
    pub session_id: Option<String>,
    /// `--append-system-prompt` (accepted, unused).
    pub append_system_prompt: Option<String>,
    /// `--allowedTools`: plain tool names become session allow rules.
    pub allowed_tools: Vec<String>,
    /// The positional prompt, if any (text input mode).
    pub prompt: Option<String>,
    /// Flags the simulator did not recognise (ignored, reported on stderr).
    pub unknown_flags: Vec<String>,
}

impl Args {
    /// True when stdin carries the stream-json protocol.
    pub fn stream_input(&self) -> bool {
        self.input_format.as_deref() == Some("stream-json")
    }

    /// True when permission prompts go to the host over stdio.
    pub fn stdio_prompts(&self) -> bool {
        self.permission_prompt_tool.as_deref() == Some("stdio") && self.stream_input()
    }

    /// The effective permission mode.
    pub fn mode(&self) -> &str {
        self.permission_mode.as_deref().unwrap_or("default")
    }

    /// Checks the combination of options like the real CLI does, returning the stderr text.
    pub fn validate(&self) -> Result<(), String> {
        if !self.print {
            return Err("Error: nucleic-sim only supports print mode (-p / --print)".into());
        }
        match self.output_format.as_deref() {
            Some("stream-json") => {}
            Some(other) => {
                return Err(format!(
                    "Error: nucleic-sim only supports --output-format stream-json (got {other})"
                ));
            }
            None => {
                return Err("Error: nucleic-sim only supports --output-format stream-json".into());
            }
        }
        if !self.verbose {
            return Err(
                "Error: When using --print, --output-format=stream-json requires --verbose".into(),
            );
        }
        match self.input_format.as_deref() {
            None | Some("text" | "stream-json") => {}
            Some(other) => {
                return Err(format!(
                    "Error: Invalid input format \"{other}\". Allowed: text, stream-json"
                ));
            }
        }
        if let Some(mode) = &self.permission_mode
            && !PERMISSION_MODES.contains(&mode.as_str())
        {
            return Err(format!(
                "Error: Invalid permission mode \"{mode}\". Allowed: {}",
                PERMISSION_MODES.join(", ")
            ));
        }
        if let Some(id) = &self.session_id
            && uuid::Uuid::parse_str(id).is_err()
        {
            return Err("Error: Invalid session ID. Must be a valid UUID.".into());
        }
        Ok(())
    }
}

/// Parses argv (without the program name).
pub fn parse(argv: &[String]) -> Result<Command, String> {
    let mut args = Args::default();
    let mut i = 0;
    while i < argv.len() {
        let raw = argv[i].as_str();
        i += 1;
        if raw == "--" {
            if let Some(rest) = argv.get(i..)
                && !rest.is_empty()
            {
                args.prompt = Some(rest.join(" "));
            }
            break;
        }
        if !raw.starts_with('-') || raw == "-" {
            if args.prompt.is_none() {
                args.prompt = Some(raw.to_owned());
            }
            continue;
        }
        let (flag, inline) = match raw.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (raw, None),
        };
        match flag {
            "--version" | "-v" => return Ok(Command::Version),
            "--help" | "-h" => return Ok(Command::Help),
            _ => {}
        }
        if VALUE_FLAGS.contains(&flag) {
            let value = match inline {
                Some(v) => v,
                None => {
                    let Some(v) = argv.get(i) else {
                        return Err(format!("error: option '{flag} <value>' argument missing"));
                    };
                    i += 1;
                    v.clone()
                }
            };
            set_value(&mut args, flag, value);
        } else if LIST_FLAGS.contains(&flag) {
            let mut values: Vec<String> = inline.into_iter().collect();
            while let Some(v) = argv.get(i) {
                if v.starts_with('-') || (!values.is_empty() && !LIST_GREEDY.contains(&flag)) {
                    break;
                }
                values.push(v.clone());
                i += 1;
            }
            if values.is_empty() {
                return Err(format!("error: option '{flag} <values...>' argument missing"));
            }
            if matches!(flag, "--allowedTools" | "--allowed-tools") {
                args.allowed_tools.extend(
                    values
                        .iter()
                        .flat_map(|v| v.split([',', ' ']))
                        .map(str::trim)
                        .filter(|v| !v.is_empty())
                        .map(str::to_owned),
                );
            }
        } else if BOOL_FLAGS.contains(&flag) {
            match flag {
                "-p" | "--print" => args.print = true,
                "--verbose" => args.verbose = true,
                "--include-partial-messages" => args.include_partial_messages = true,
                "--replay-user-messages" => args.replay_user_messages = true,
                "--fork-session" => args.fork_session = true,
                "--dangerously-skip-permissions" => {
                    args.permission_mode = Some("bypassPermissions".into());
                }
                _ => {}
            }
        } else {
            args.unknown_flags.push(raw.to_owned());
        }
    }
    Ok(Command::Run(Box::new(args)))
}

/// Variadic flags that keep taking values until the next flag, as commander does. The
/// others take one value so a positional prompt after them is not swallowed.
const LIST_GREEDY: &[&str] =
    &["--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools"];

fn set_value(args: &mut Args, flag: &str, value: String) {
    match flag {
        "--model" => args.model = Some(value),
        "--resume" | "-r" => args.resume = Some(value),
        "--session-id" => args.session_id = Some(value),
        "--append-system-prompt" => args.append_system_prompt = Some(value),
        "--permission-mode" => args.permission_mode = Some(value),
        "--permission-prompt-tool" => args.permission_prompt_tool = Some(value),
        "--output-format" => args.output_format = Some(value),
        "--input-format" => args.input_format = Some(value),
        _ => {}
    }
}

/// The `--help` text.
pub const HELP: &str = "\
Usage: fake-claude -p --output-format stream-json --verbose [options] [prompt]

Nucleic simulated agent: speaks the Claude Code stream-json and stdio control
protocol with no model. See the nucleic-sim crate docs for the prompt grammar.

Options honoured:
  -p, --print                     print mode (required)
  --output-format stream-json     (required, with --verbose)
  --input-format text|stream-json stream-json enables the stdin protocol
  --permission-mode <mode>        default|acceptEdits|auto|bypassPermissions|manual|dontAsk|plan
  --permission-prompt-tool stdio  ask the host with can_use_tool control requests
  --include-partial-messages      emit stream_event lines
  --replay-user-messages          echo user messages with isReplay
  --model <m>                     model name reported (default claude-sim-1)
  --session-id <uuid>, --resume <id>, --fork-session
  --allowedTools <names...>       tools allowed without asking
  -v, --version                   print the version
Env: NUCLEIC_SIM_FAULT=crash_mid_turn,malformed_stdout,unknown_lines,hang,api_error,ignore_stdin_eof
";

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn run_args(s: &str) -> Args {
        match parse(&argv(s)) {
            Ok(Command::Run(a)) => *a,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn parses_the_host_command_line() {
        let a = run_args(
            "-p --output-format stream-json --input-format stream-json --verbose \
             --permission-mode acceptEdits --strict-mcp-config --permission-prompt-tool stdio \
             --include-partial-messages --model m1 --resume 4a0e0f5e-3c2b-4c5e-9f5e-0c6c2a1d9b11 \
             --fork-session --append-system-prompt x",
        );
        assert!(a.print && a.verbose && a.include_partial_messages && a.fork_session);
        assert!(a.stream_input() && a.stdio_prompts());
        assert_eq!(a.mode(), "acceptEdits");
        assert_eq!(a.model.as_deref(), Some("m1"));
        assert_eq!(a.resume.as_deref(), Some("4a0e0f5e-3c2b-4c5e-9f5e-0c6c2a1d9b11"));
        assert_eq!(a.append_system_prompt.as_deref(), Some("x"));
        assert!(a.unknown_flags.is_empty());
        assert_eq!(a.validate(), Ok(()));
    }

    #[test]
    fn version_help_and_equals_forms() {
        assert_eq!(parse(&argv("--version")), Ok(Command::Version));
        assert_eq!(parse(&argv("-p -v")), Ok(Command::Version));
        assert_eq!(parse(&argv("-h")), Ok(Command::Help));
        let a = run_args("-p --output-format=stream-json --verbose --model=x hello");
        assert_eq!(a.output_format.as_deref(), Some("stream-json"));
        assert_eq!(a.model.as_deref(), Some("x"));
        assert_eq!(a.prompt.as_deref(), Some("hello"));
    }

    #[test]
    fn validation_errors_match_the_real_cli() {
        let a = run_args("-p --output-format stream-json");
        assert_eq!(
            a.validate(),
            Err("Error: When using --print, --output-format=stream-json requires --verbose".into())
        );
        assert!(run_args("-p --output-format json --verbose").validate().is_err());
        assert!(run_args("--output-format stream-json --verbose").validate().is_err());
        assert!(
            run_args("-p --output-format stream-json --verbose --permission-mode yolo")
                .validate()
                .is_err()
        );
        assert!(
            run_args("-p --output-format stream-json --verbose --session-id nope")
                .validate()
                .is_err()
        );
        assert!(parse(&argv("-p --model")).is_err());
    }

    #[test]
    fn lists_unknown_flags_and_allowed_tools() {
        let a = run_args("-p --allowedTools Write,Edit Bash(echo:*) --frobnicate --tools Read hi");
        assert_eq!(a.allowed_tools, vec!["Write", "Edit", "Bash(echo:*)"]);
        assert_eq!(a.unknown_flags, vec!["--frobnicate"]);
        assert_eq!(a.prompt.as_deref(), Some("hi"));
        let b = run_args("-p --dangerously-skip-permissions");
        assert_eq!(b.mode(), "bypassPermissions");
        assert!(!b.stdio_prompts());
    }
}
