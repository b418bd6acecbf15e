//! The `/cc` language of a chat (PingPongCode's, seed 001): one message → one [`Command`], or a
//! [`CommandError`] that says what was expected. Pure: no I/O, no session state.

use std::fmt;

use thiserror::Error;

/// The policy mode a chat can switch its session to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Readonly,
    Edit,
    Full,
}

impl Mode {
    /// The mode's name on the wire (`setMode`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Readonly => "readonly",
            Mode::Edit => "edit",
            Mode::Full => "full",
        }
    }
}

/// An answer to something pending: an approval (`approve`/`deny`) or a plan
/// (`confirm`/`reject`), with the short code of the one meant (omitted when only one is
/// pending) and the person's reason.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    pub code: Option<String>,
    pub reason: Option<String>,
}

/// What one `/cc` message asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/cc <task>`: a new task (a new session in the chat's project, or the next turn of the
    /// chat's session when one is selected).
    Task(String),
    /// `/cc plan <task>`: a task planned first (two-phase): a new session in Claude Code's plan
    /// mode, whose plan comes to the chat to confirm (it then runs in edit mode) or reject.
    Plan(String),
    /// `/cc say <text>`: a follow-up to the chat's current session.
    Say(String),
    Confirm(Answer),
    Reject(Answer),
    Approve(Answer),
    Deny(Answer),
    Mode(Mode),
    Project(String),
    Sessions,
    /// `/cc resume N`: the N-th session of the last `/cc sessions` list (1-based).
    Resume(usize),
    NewSession(String),
    Session,
    Diff,
    Tests,
    Report,
    Keep,
    /// `/cc rollback`: discards the session's work — only after a second confirmation.
    Rollback,
    Continue,
    Clear,
    Handoff,
    Cancel,
    /// `/cc send <path>`: a file of the worktree back to the chat (relative, inside).
    Send(String),
    /// `/cc needs-you on|off`: this chat gets only "needs you" notices, without content (on),
    /// or the full reports (off).
    NeedsYou(bool),
    /// `/cc threads on|off`: new sessions of this room report in a thread of their own
    /// (Matrix).
    Threads(bool),
    Pair(String),
    Help,
}

/// Why a `/cc` message is not a command.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommandError {
    #[error("not a /cc command")]
    NotCommand,
    #[error("/cc needs a task or a command; /cc help lists them")]
    Empty,
    #[error("/cc {command} {expected}")]
    Usage { command: &'static str, expected: &'static str },
    #[error("/cc send {path:?}: {why}")]
    BadPath { path: String, why: &'static str },
}

/// The prefix every command starts with.
pub const PREFIX: &str = "/cc";

/// How long a code is (`codes.rs` makes them): a first word of another length is a reason.
const CODE_LEN: usize = 4;

/// Parses one chat message. A message that does not start with `/cc` (or `/cc@botname`, as
/// Telegram writes commands in groups) is [`CommandError::NotCommand`].
pub fn parse(message: &str) -> Result<Command, CommandError> {
    let rest = strip_prefix(message.trim()).ok_or(CommandError::NotCommand)?;
    let rest = rest.trim();
    if rest.is_empty() {
        return Err(CommandError::Empty);
    }
    let (word, args) = match rest.split_once(char::is_whitespace) {
        Some((word, args)) => (word, args.trim()),
        None => (rest, ""),
    };
    let bare = |command: Command, name: &'static str| {
        if args.is_empty() {
            Ok(command)
        } else {
            Err(CommandError::Usage { command: name, expected: "takes no arguments" })
        }
    };
    let text = |name: &'static str, expected: &'static str| {
        if args.is_empty() {
            Err(CommandError::Usage { command: name, expected })
        } else {
            Ok(args.to_owned())
        }
    };
    match word.to_ascii_lowercase().as_str() {
        "say" => text("say", "needs the text to send").map(Command::Say),
        "plan" => text("plan", "needs the task to plan").map(Command::Plan),
        "confirm" => Ok(Command::Confirm(answer(args))),
        "reject" => Ok(Command::Reject(answer(args))),
        "approve" => Ok(Command::Approve(answer(args))),
        "deny" => Ok(Command::Deny(answer(args))),
        "mode" => match args.to_ascii_lowercase().as_str() {
            "readonly" => Ok(Command::Mode(Mode::Readonly)),
            "edit" => Ok(Command::Mode(Mode::Edit)),
            "full" => Ok(Command::Mode(Mode::Full)),
            _ => Err(CommandError::Usage {
                command: "mode",
                expected: "takes readonly, edit or full",
            }),
        },
        "project" => text("project", "needs a project's name").map(Command::Project),
        "sessions" => bare(Command::Sessions, "sessions"),
        "resume" => match args.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Command::Resume(n)),
            _ => Err(CommandError::Usage {
                command: "resume",
                expected: "needs the number of a session from /cc sessions",
            }),
        },
        "new-session" => text("new-session", "needs a title").map(Command::NewSession),
        "session" => bare(Command::Session, "session"),
        "diff" => bare(Command::Diff, "diff"),
        "tests" => bare(Command::Tests, "tests"),
        "report" => bare(Command::Report, "report"),
        "keep" => bare(Command::Keep, "keep"),
        "rollback" => bare(Command::Rollback, "rollback"),
        "continue" => bare(Command::Continue, "continue"),
        "clear" => bare(Command::Clear, "clear"),
        "handoff" => bare(Command::Handoff, "handoff"),
        "cancel" => bare(Command::Cancel, "cancel"),
        "send" => {
            let path = text("send", "needs a path relative to the session's worktree")?;
            check_relative(&path).map(|()| Command::Send(path))
        }
        "needs-you" => match args.to_ascii_lowercase().as_str() {
            "on" => Ok(Command::NeedsYou(true)),
            "off" => Ok(Command::NeedsYou(false)),
            _ => Err(CommandError::Usage { command: "needs-you", expected: "takes on or off" }),
        },
        "threads" => match args.to_ascii_lowercase().as_str() {
            "on" => Ok(Command::Threads(true)),
            "off" => Ok(Command::Threads(false)),
            _ => Err(CommandError::Usage { command: "threads", expected: "takes on or off" }),
        },
        "pair" => text("pair", "needs the code `nucleic chat pair` printed").map(Command::Pair),
        "help" => Ok(Command::Help),
        // Anything else is a task, word and all.
        _ => Ok(Command::Task(rest.to_owned())),
    }
}

impl Command {
    /// Whether its answer quotes the session's work (refused in a "needs you only" chat).
    pub fn quotes_the_work(&self) -> bool {
        match self {
            Command::Sessions
            | Command::Session
            | Command::Diff
            | Command::Tests
            | Command::Report
            | Command::Handoff
            | Command::Send(_) => true,
            Command::Task(_)
            | Command::Plan(_)
            | Command::Say(_)
            | Command::Confirm(_)
            | Command::Reject(_)
            | Command::Approve(_)
            | Command::Deny(_)
            | Command::Mode(_)
            | Command::Project(_)
            | Command::Resume(_)
            | Command::NewSession(_)
            | Command::Keep
            | Command::Rollback
            | Command::Continue
            | Command::Clear
            | Command::Cancel
            | Command::NeedsYou(_)
            | Command::Threads(_)
            | Command::Pair(_)
            | Command::Help => false,
        }
    }
}

/// `/cc` or `/cc@bot` at the start, as a whole word; the rest.
fn strip_prefix(message: &str) -> Option<&str> {
    let rest = message.strip_prefix(PREFIX)?;
    if let Some(after_bot) = rest.strip_prefix('@') {
        let end = after_bot.find(char::is_whitespace).unwrap_or(after_bot.len());
        return Some(&after_bot[end..]);
    }
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// `[code] [reason]`: the first word is a code when it looks like one.
fn answer(args: &str) -> Answer {
    let (first, rest) = match args.split_once(char::is_whitespace) {
        Some((first, rest)) => (first, rest.trim()),
        None => (args, ""),
    };
    if !first.is_empty() && looks_like_code(first) {
        let reason = (!rest.is_empty()).then(|| rest.to_owned());
        return Answer { code: Some(first.to_ascii_uppercase()), reason };
    }
    let reason = (!args.is_empty()).then(|| args.to_owned());
    Answer { code: None, reason }
}

/// A code is four letters and digits with a digit among them, so a reason's first word
/// ("because", "no", "v2") is not taken for one.
fn looks_like_code(word: &str) -> bool {
    word.len() == CODE_LEN
        && word.chars().all(|c| c.is_ascii_alphanumeric())
        && word.chars().any(|c| c.is_ascii_digit())
}

/// A path a chat may name: relative, no `..`, no NUL, no backslash games.
fn check_relative(path: &str) -> Result<(), CommandError> {
    let bad = |why| Err(CommandError::BadPath { path: path.to_owned(), why });
    if path.starts_with('/') || path.starts_with('~') {
        return bad("is not relative to the worktree");
    }
    if path.contains('\0') || path.contains('\\') {
        return bad("holds a character a path may not have here");
    }
    if path.split('/').any(|part| part == "..") {
        return bad("climbs out of the worktree");
    }
    Ok(())
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The command reference a chat gets for `/cc help`.
pub const HELP: &str = "\
/cc <task> — start a task (or the next turn of the selected session)
/cc plan <task> — a new session that plans first: confirm or reject its plan here
/cc say <text> — a follow-up to the current session
/cc approve|deny [code] [reason] — answer an approval (the code when more than one waits)
/cc confirm|reject [code] [reason] — answer a plan
/cc mode readonly|edit|full — the session's mode
/cc project <name> — the project new tasks go to
/cc sessions, /cc resume N, /cc new-session <title>, /cc session
/cc diff, /cc tests, /cc report — what the work is
/cc keep, /cc rollback, /cc continue, /cc clear, /cc handoff, /cc cancel
/cc send <path> — a file of the worktree to this chat (a photo or document sent here is attached)
/cc needs-you on|off — only \"needs you\" notices, without content (on), or full reports (off)
/cc threads on|off — each new session in a thread of its own (Matrix)
/cc pair <code> — bind this chat to the host
/cc help";

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_of(code: Option<&str>, reason: Option<&str>) -> Answer {
        Answer { code: code.map(str::to_owned), reason: reason.map(str::to_owned) }
    }

    #[test]
    fn tasks_and_commands() {
        assert_eq!(
            parse("/cc fix the failing test"),
            Ok(Command::Task("fix the failing test".into()))
        );
        assert_eq!(parse("  /cc   diff  "), Ok(Command::Diff));
        assert_eq!(parse("/cc@nucleic_bot keep"), Ok(Command::Keep));
        assert_eq!(parse("/cc say also add a test"), Ok(Command::Say("also add a test".into())));
        assert_eq!(parse("/cc plan the migration"), Ok(Command::Plan("the migration".into())));
        assert!(parse("/cc plan").is_err(), "a plan needs its task");
        assert_eq!(parse("/cc mode READONLY"), Ok(Command::Mode(Mode::Readonly)));
        assert_eq!(parse("/cc resume 2"), Ok(Command::Resume(2)));
        assert_eq!(parse("/cc new-session Docs pass"), Ok(Command::NewSession("Docs pass".into())));
        assert_eq!(parse("/cc send src/main.rs"), Ok(Command::Send("src/main.rs".into())));
        assert_eq!(parse("/cc pair 4F7K2Q"), Ok(Command::Pair("4F7K2Q".into())));
        assert_eq!(parse("/cc needs-you ON"), Ok(Command::NeedsYou(true)));
        assert_eq!(parse("/cc needs-you off"), Ok(Command::NeedsYou(false)));
        assert!(parse("/cc needs-you maybe").is_err());
        assert_eq!(parse("/cc threads on"), Ok(Command::Threads(true)));
        assert!(parse("/cc threads").is_err());
        // A task that starts with a word that is no command is a task, word and all.
        assert_eq!(parse("/cc explain diffs"), Ok(Command::Task("explain diffs".into())));
    }

    #[test]
    fn answers_carry_a_code_only_when_the_first_word_is_one() {
        assert_eq!(parse("/cc approve"), Ok(Command::Approve(answer_of(None, None))));
        assert_eq!(parse("/cc approve k7p2"), Ok(Command::Approve(answer_of(Some("K7P2"), None))));
        assert_eq!(
            parse("/cc deny K7P2 not on main"),
            Ok(Command::Deny(answer_of(Some("K7P2"), Some("not on main"))))
        );
        assert_eq!(
            parse("/cc reject too big, split it"),
            Ok(Command::Reject(answer_of(None, Some("too big, split it"))))
        );
        assert_eq!(parse("/cc confirm"), Ok(Command::Confirm(answer_of(None, None))));
    }

    #[test]
    fn what_is_not_a_command_says_what_was_expected() {
        assert_eq!(parse("hello"), Err(CommandError::NotCommand));
        assert_eq!(parse("/ccdiff"), Err(CommandError::NotCommand));
        assert_eq!(parse("/cc"), Err(CommandError::Empty));
        assert_eq!(
            parse("/cc mode yolo").unwrap_err().to_string(),
            "/cc mode takes readonly, edit or full"
        );
        assert_eq!(
            parse("/cc diff please").unwrap_err().to_string(),
            "/cc diff takes no arguments"
        );
        assert!(matches!(
            parse("/cc resume 0"),
            Err(CommandError::Usage { command: "resume", .. })
        ));
        assert!(matches!(parse("/cc say"), Err(CommandError::Usage { command: "say", .. })));
    }

    #[test]
    fn send_refuses_paths_out_of_the_worktree() {
        for path in ["/etc/passwd", "../x", "a/../../x", "~/.ssh/id_rsa", "a\\..\\b", "a\0b"] {
            let message = format!("/cc send {path}");
            assert!(
                matches!(parse(&message), Err(CommandError::BadPath { .. })),
                "{path:?} was accepted"
            );
        }
        assert_eq!(parse("/cc send docs/a..b.md"), Ok(Command::Send("docs/a..b.md".into())));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_errs_without_panicking(text in ".{0,300}") {
            let _ = parse(&text);
            let _ = parse(&format!("/cc {text}"));
        }

        #[test]
        fn a_sent_path_that_parses_stays_inside(path in "[a-z./]{1,20}") {
            if let Ok(Command::Send(p)) = parse(&format!("/cc send {path}")) {
                proptest::prop_assert!(!p.starts_with('/') && !p.split('/').any(|c| c == ".."));
            }
        }
    }
}
