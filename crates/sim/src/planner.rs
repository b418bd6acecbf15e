//! Planner: turns a prompt into the deterministic list of actions the simulated agent takes.

/// One tool call the agent will make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write `content` to `path` (as typed, relative to cwd unless absolute).
    Write {
        /// The path as typed.
        path: String,
        /// The file content.
        content: String,
    },
    /// Replace `old` by `new` in `path`.
    Edit {
        /// The path as typed.
        path: String,
        /// Text to find.
        old: String,
        /// Replacement text.
        new: String,
    },
    /// Run a shell command.
    Bash {
        /// The command line.
        command: String,
    },
    /// Submit a plan for approval (`ExitPlanMode`).
    Plan {
        /// The plan's markdown.
        plan: String,
    },
    /// Ask the person one question with choices (`AskUserQuestion`).
    Ask {
        /// The question's text.
        question: String,
        /// The choices' labels.
        options: Vec<String>,
        /// Several choices may be picked.
        multi_select: bool,
    },
}

impl Action {
    /// The tool name the real CLI uses for this action.
    pub fn tool_name(&self) -> &'static str {
        match self {
            Self::Write { .. } => "Write",
            Self::Edit { .. } => "Edit",
            Self::Bash { .. } => "Bash",
            Self::Plan { .. } => "ExitPlanMode",
            Self::Ask { .. } => "AskUserQuestion",
        }
    }

    /// A short sentence announcing the action ("write a.txt").
    pub fn describe(&self) -> String {
        match self {
            Self::Write { path, .. } => format!("write {path}"),
            Self::Edit { path, .. } => format!("edit {path}"),
            Self::Bash { command } => format!("run `{command}`"),
            Self::Plan { .. } => "submit my plan".to_owned(),
            Self::Ask { question, .. } => format!("ask: {question}"),
        }
    }
}

/// What the agent will do for one prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Emit a thinking block first (`think` appears as a word).
    pub think: bool,
    /// Sleep 200 ms between stream chunks (`slow` appears as a word).
    pub slow: bool,
    /// `stream N`: open with a long reply streamed as N text deltas, one every
    /// [`STREAM_DELTA_DELAY`](crate::stream::STREAM_DELTA_DELAY) (a session that visibly streams
    /// for minutes).
    pub stream: Option<usize>,
    /// `fast`: no pause between the deltas of `stream N` (long transcripts quickly).
    pub fast: bool,
    /// `brisk`: the deltas of `stream N` come every
    /// [`STREAM_BRISK_DELAY`](crate::stream::STREAM_BRISK_DELAY), a real model's token pace.
    pub brisk: bool,
    /// The tool calls, in order. Empty means a plain text reply.
    pub actions: Vec<Action>,
    /// `say TEXT`: what the final message claims after "Done." (e.g. "All tests pass.").
    pub claim: Option<String>,
    /// The prompt text, trimmed.
    pub prompt: String,
}

impl Plan {
    /// The text block that opens the reply: an announcement of the actions, or the whole
    /// reply when there are none.
    pub fn opening_text(&self) -> String {
        let narration = self.stream.map(narration).unwrap_or_default();
        if self.actions.is_empty() {
            if !narration.is_empty() {
                return narration;
            }
            return format!(
                "Simulated agent here. You said: {}. Try: write notes.txt containing hi",
                self.prompt
            );
        }
        let mut parts = self.actions.iter().map(Action::describe);
        let mut text = format!("{narration}I'll {}.", parts.next().unwrap_or_default());
        for part in parts {
            text.push_str(&format!(" Then I'll {part}."));
        }
        text
    }

    /// The thinking text, when [`Plan::think`] is set.
    pub fn thinking_text(&self) -> String {
        format!(
            "The user asked: {}. I will plan {} action(s) and carry them out.",
            self.prompt,
            self.actions.len()
        )
    }
}

/// Words skipped before the verb of a step.
const FILLER: &[&str] = &["please", "think", "slow", "and", "then", "now", "first", "also"];

/// Most deltas `stream N` asks for (about a day at the streaming pace).
pub const MAX_STREAM_DELTAS: usize = 400_000;

/// Sentences a long streamed reply cycles through.
const NARRATION: &[&str] = &[
    "Reading the project layout to see how the pieces fit together.",
    "The entry point parses its arguments and hands them to the core module.",
    "Tests live in their own directory and run with the standard runner.",
    "Checking how errors travel from the lowest layer up to the command line.",
    "This function does two things at once; splitting it would make it easier to test.",
    "The configuration is read once at start and passed down explicitly, which is good.",
    "Looking for places where a slow call blocks everything behind it.",
    "Noting edge cases: empty input, very long lines, and files that disappear mid-read.",
];

/// About `deltas` pieces of text (four words each), sentence after sentence, ending in a blank
/// line.
fn narration(deltas: usize) -> String {
    let mut words = Vec::new();
    let mut step = 1;
    while words.len() < deltas * 4 {
        let sentence = NARRATION[(step - 1) % NARRATION.len()];
        words.push(format!("{step}."));
        words.extend(sentence.split(' ').map(str::to_owned));
        step += 1;
    }
    let mut text = words.join(" ");
    text.push_str("\n\n");
    text
}

/// Builds the plan for a prompt. See the crate documentation for the grammar.
pub fn plan(prompt: &str) -> Plan {
    let prompt = prompt.trim().to_owned();
    let words: Vec<String> =
        prompt.split(|c: char| !c.is_alphanumeric()).map(str::to_ascii_lowercase).collect();
    let think = words.iter().any(|w| w == "think");
    let slow = words.iter().any(|w| w == "slow");
    let stream = words
        .windows(2)
        .find(|w| w[0] == "stream")
        .and_then(|w| w[1].parse::<usize>().ok())
        .filter(|n| *n > 0)
        .map(|n| n.min(MAX_STREAM_DELTAS));
    let steps = split_steps(&prompt);
    let claim = steps.iter().find_map(|step| {
        let step = step.trim();
        let (verb, rest) = split_word(step);
        verb.eq_ignore_ascii_case("say").then(|| unescape(rest.trim())).filter(|c| !c.is_empty())
    });
    let actions = steps.into_iter().filter_map(parse_step).collect();
    let fast = words.iter().any(|w| w == "fast");
    let brisk = words.iter().any(|w| w == "brisk");
    Plan { think, slow, stream, fast, brisk, actions, claim, prompt }
}

/// Splits on ` then ` (any case), keeping the original text of each step.
fn split_steps(prompt: &str) -> Vec<&str> {
    let lower = prompt.to_ascii_lowercase();
    let mut steps = Vec::new();
    let mut start = 0;
    while let Some(pos) = lower[start..].find(" then ") {
        steps.push(&prompt[start..start + pos]);
        start += pos + " then ".len();
    }
    steps.push(&prompt[start..]);
    steps
}

/// Parses one step; `None` when it is not an action.
fn parse_step(step: &str) -> Option<Action> {
    let mut rest = step.trim();
    // Skip filler words ("please", "think,", ...) before the verb.
    loop {
        let (word, tail) = split_word(rest);
        let bare = word.trim_matches(|c: char| c == ',' || c == ':' || c == ';');
        if !word.is_empty() && FILLER.contains(&bare.to_ascii_lowercase().as_str()) {
            rest = tail;
        } else {
            break;
        }
    }
    let (verb, tail) = split_word(rest);
    let verb = verb.to_ascii_lowercase();
    match verb.as_str() {
        "write" | "create" => {
            let (path, tail) = split_word(tail);
            let path = clean_path(path)?;
            let content = strip_keyword(tail, "containing")
                .map(|t| unescape(t.trim()))
                .map(|mut t| {
                    if !t.ends_with('\n') {
                        t.push('\n');
                    }
                    t
                })
                .unwrap_or_else(|| "hello\n".to_owned());
            Some(Action::Write { path, content })
        }
        "edit" => {
            let (path, tail) = tail.trim_start().split_once(':')?;
            let path = clean_path(path.trim())?;
            let (old, new) = tail.split_once(" -> ").or_else(|| tail.split_once("->"))?;
            let old = unescape(old.trim());
            if old.is_empty() {
                return None;
            }
            Some(Action::Edit { path, old, new: unescape(new.trim()) })
        }
        "run" | "bash" | "bash:" => bash_step(tail),
        // `plan TEXT` (`\n` for new lines; an empty plan is allowed: the host refuses it).
        "plan" | "plan:" => Some(Action::Plan { plan: unescape(tail.trim()) }),
        // `ask [many] QUESTION? A / B / C`.
        "ask" | "ask:" => ask_step(tail),
        _ => {
            // `bash:ls` with no space after the colon.
            let lower = rest.to_ascii_lowercase();
            if lower.starts_with("bash:") { bash_step(&rest["bash:".len()..]) } else { None }
        }
    }
}

fn ask_step(tail: &str) -> Option<Action> {
    let (multi_select, tail) = match strip_keyword(tail, "many") {
        Some(rest) => (true, rest),
        None => (false, tail),
    };
    let (question, choices) = tail.split_once('?')?;
    let options: Vec<String> =
        choices.split('/').map(|c| c.trim().to_owned()).filter(|c| !c.is_empty()).collect();
    (options.len() >= 2).then(|| Action::Ask {
        question: format!("{}?", question.trim()),
        options,
        multi_select,
    })
}

fn bash_step(tail: &str) -> Option<Action> {
    let command = tail.trim().trim_start_matches(':').trim();
    (!command.is_empty()).then(|| Action::Bash { command: command.to_owned() })
}

/// Splits off the first whitespace-delimited word.
fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// Returns the text after `keyword` when `s` starts with it (case-insensitive).
fn strip_keyword<'a>(s: &'a str, keyword: &str) -> Option<&'a str> {
    let (word, tail) = split_word(s);
    word.eq_ignore_ascii_case(keyword).then_some(tail)
}

/// Strips quotes and trailing sentence punctuation from a path token.
fn clean_path(token: &str) -> Option<String> {
    let path = token
        .trim_matches(|c: char| c == '"' || c == '\'' || c == '`')
        .trim_end_matches(['.', ',', ';', ':', '!', '?']);
    (!path.is_empty()).then(|| path.to_owned())
}

/// Turns the two-character escapes `\n` and `\t` into the characters.
fn unescape(s: &str) -> String {
    s.replace("\\n", "\n").replace("\\t", "\t")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &str, content: &str) -> Action {
        Action::Write { path: path.into(), content: content.into() }
    }

    #[test]
    fn say_is_a_claim_not_an_action() {
        let p = plan("edit calc.py: a - b -> a + b then say Fixed it. All tests pass.");
        assert_eq!(p.actions.len(), 1);
        assert_eq!(p.claim.as_deref(), Some("Fixed it. All tests pass."));
        assert_eq!(plan("write a.txt").claim, None);
    }

    #[test]
    fn write_and_create() {
        assert_eq!(plan("write a.txt").actions, vec![write("a.txt", "hello\n")]);
        assert_eq!(
            plan("Please create hello.txt containing hello").actions,
            vec![write("hello.txt", "hello\n")]
        );
        assert_eq!(
            plan("WRITE dir/b.md CONTAINING line one\\nline two").actions,
            vec![write("dir/b.md", "line one\nline two\n")]
        );
        assert_eq!(plan("write notes.txt.").actions, vec![write("notes.txt", "hello\n")]);
        assert_eq!(plan("write").actions, vec![]);
    }

    #[test]
    fn edit_and_bash() {
        assert_eq!(
            plan("edit src/a.rs: foo -> bar baz").actions,
            vec![Action::Edit {
                path: "src/a.rs".into(),
                old: "foo".into(),
                new: "bar baz".into()
            }]
        );
        let bash = |c: &str| Action::Bash { command: c.into() };
        assert_eq!(plan("run ls -la").actions, vec![bash("ls -la")]);
        assert_eq!(plan("bash: echo hi > x").actions, vec![bash("echo hi > x")]);
        assert_eq!(plan("Bash:pwd").actions, vec![bash("pwd")]);
        assert_eq!(plan("edit a.txt no arrow").actions, vec![]);
    }

    #[test]
    fn steps_flags_and_plain_replies() {
        let p = plan("think first, then write a.txt Then run ls");
        assert!(p.think && !p.slow);
        assert_eq!(
            p.actions,
            vec![write("a.txt", "hello\n"), Action::Bash { command: "ls".into() }]
        );
        assert_eq!(p.opening_text(), "I'll write a.txt. Then I'll run `ls`.");
        let q = plan("slow: tell me a story");
        assert!(q.slow && q.actions.is_empty());
        assert_eq!(
            q.opening_text(),
            "Simulated agent here. You said: slow: tell me a story. Try: write notes.txt containing hi"
        );
        assert!(!plan("unthinkable").think);
    }

    #[test]
    fn stream_n_opens_with_a_long_narration() {
        let p = plan("think, then stream 50");
        assert_eq!((p.stream, p.actions.len()), (Some(50), 0));
        let text = p.opening_text();
        assert!(text.starts_with("1. Reading the project layout"), "{text}");
        assert!(text.split(' ').count() >= 200, "four words per delta");
        assert!(text.ends_with("\n\n"));
        let w = plan("stream 3 then write a.txt");
        assert_eq!(w.actions, vec![write("a.txt", "hello\n")]);
        assert!(w.opening_text().ends_with("\n\nI'll write a.txt."), "{}", w.opening_text());
        assert_eq!(plan("stream the logs").stream, None);
        assert_eq!(plan("stream 0").stream, None);
        assert!(plan("stream 20000, fast").fast && !plan("stream 5").fast);
        assert!(plan("stream 400 brisk").brisk && !plan("stream 400").brisk);
        assert_eq!(plan("stream 999999999").stream, Some(MAX_STREAM_DELTAS));
    }

    #[test]
    fn plans_and_questions() {
        assert_eq!(
            plan("plan # Steps\\n1. write a.txt").actions,
            vec![Action::Plan { plan: "# Steps\n1. write a.txt".into() }]
        );
        assert_eq!(plan("plan").actions, vec![Action::Plan { plan: String::new() }]);
        assert_eq!(
            plan("ask many Which sizes? S / M / L then write a.txt").actions[0],
            Action::Ask {
                question: "Which sizes?".into(),
                options: vec!["S".into(), "M".into(), "L".into()],
                multi_select: true
            }
        );
        assert_eq!(plan("ask Why? only one").actions, vec![]);
    }
}
