//! A small, bounded shell parser: the simple commands a command line would run, or why not.
//!
//! It is not a shell. It understands what decides *which programs run with which words*:
//! lists (`;`, `&&`, `||`, `&`, newlines), pipelines, subshells and groups, command and process
//! substitution, backticks, quoting and escapes, assignments, redirections and here-documents.
//! Whatever it cannot pin down (parameter expansion, brace and tilde forms, arithmetic,
//! `case`, function definitions, unbalanced quotes, NUL bytes) marks the word `dynamic` or the
//! script `opaque`, which the policy never auto-allows. Substitutions inside `${…}`, `$((…))`
//! and unquoted here-document bodies are parsed like any other. Work is bounded by
//! [`MAX_INPUT`] and [`MAX_DEPTH`].

mod expand;
mod lex;
mod redirect;

/// Longest command line parsed (bytes); longer ones are opaque.
pub const MAX_INPUT: usize = 64 * 1024;
/// Deepest nesting of subshells, substitutions and `bash -c` strings.
pub const MAX_DEPTH: usize = 12;
/// Most simple commands collected from one line.
pub const MAX_COMMANDS: usize = 512;
/// Most here-documents in one line (each scans the rest of its line).
pub const MAX_HEREDOCS: usize = 64;

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The literal text after quote removal (expansions left out).
    pub text: String,
    /// Contains an expansion whose value is only known at run time.
    pub dynamic: bool,
    /// Contains an unquoted glob character (`*`, `?`, `[`).
    pub glob: bool,
    /// Byte offset in `text` where the first run-time expansion sits.
    pub dynamic_at: Option<usize>,
    /// An expansion outside double quotes: its value is split and globbed at run time.
    pub unquoted_expansion: bool,
    /// The word as written, quotes included, when it is dynamic or a glob (for messages).
    pub raw: String,
}

/// What a redirection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `<`, `<>`: reads a file.
    Read,
    /// `>`, `>>`, `>|`, `&>`, `>& file`: writes a file.
    Write,
    /// `>&2`, `<&0`, `>&-`: duplicates or closes a descriptor.
    Dup,
    /// `<<`, `<<<`: feeds text (the target is the text).
    Input,
}

/// A redirection of one simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// Its kind.
    pub kind: RedirectKind,
    /// The file, descriptor or here-text.
    pub target: Word,
}

/// Where a simple command sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// In the line itself, a subshell or a group.
    Direct,
    /// Inside `$( )`, backticks or `<( )`/`>( )`.
    Substitution,
}

/// One simple command: assignments, words and redirections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` prefixes, verbatim after quote removal.
    pub assignments: Vec<Word>,
    /// The command name and its arguments.
    pub words: Vec<Word>,
    /// Its redirections.
    pub redirects: Vec<Redirect>,
    /// Which pipeline it belongs to (unique per parse).
    pub pipeline: usize,
    /// Its stage in that pipeline (0 = first).
    pub stage: usize,
    /// Where it sits.
    pub origin: Origin,
    /// Indices (into [`Script::commands`]) of commands run by substitutions in its words.
    pub substitutions: Vec<usize>,
}

/// The result of parsing a line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// Every simple command found, innermost substitutions before the command using them.
    pub commands: Vec<SimpleCommand>,
    /// Why the line is not fully understood (empty when it is).
    pub opaque: Vec<String>,
}

/// Parses a command line. Never fails: what it cannot understand is listed in `opaque`.
pub fn parse(line: &str) -> Script {
    parse_at_depth(line, 0)
}

/// Parses text found inside another command (`bash -c`, here-documents) at a nesting depth.
pub fn parse_at_depth(line: &str, depth: usize) -> Script {
    let mut script = Script::default();
    if line.len() > MAX_INPUT {
        script.opaque.push(format!("command longer than {MAX_INPUT} bytes"));
        return script;
    }
    if line.contains('\0') {
        script.opaque.push("a NUL byte (bash stops reading the line there)".to_owned());
    }
    if line.contains('\u{fffd}') {
        script.opaque.push("bytes that are not valid UTF-8 (shown as U+FFFD)".to_owned());
    }
    if depth > MAX_DEPTH {
        script.opaque.push(format!("nested deeper than {MAX_DEPTH} levels"));
        return script;
    }
    let mut parser = Parser {
        chars: line.chars().collect(),
        pos: 0,
        depth,
        script: &mut script,
        next_pipeline: 0,
        in_substitution: 0,
        heredocs: 0,
    };
    let pipeline = parser.new_pipeline();
    parser.parse_list(None, pipeline, 0);
    script
}

const KEYWORDS_SKIPPED: &[&str] =
    &["!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "time"];
const KEYWORDS_OPAQUE: &[&str] = &["case", "esac", "function", "coproc", "in"];

struct Parser<'s> {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    script: &'s mut Script,
    next_pipeline: usize,
    /// How many substitutions enclose the current position.
    in_substitution: usize,
    /// Here-documents read so far.
    heredocs: usize,
}

/// A command being assembled.
#[derive(Default)]
struct Building {
    assignments: Vec<Word>,
    words: Vec<Word>,
    redirects: Vec<Redirect>,
    substitutions: Vec<usize>,
    /// A `for NAME in WORDS` / `select` header: its words run nothing (their substitutions do).
    loop_header: bool,
    /// The `time` keyword was just skipped (its `-p` is not the command name).
    after_time: bool,
}

impl Building {
    fn is_empty(&self) -> bool {
        self.assignments.is_empty() && self.words.is_empty() && self.redirects.is_empty()
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn opaque(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.script.opaque.contains(&why) {
            self.script.opaque.push(why);
        }
    }

    fn new_pipeline(&mut self) -> usize {
        self.next_pipeline += 1;
        self.next_pipeline
    }

    fn full(&self) -> bool {
        self.script.commands.len() >= MAX_COMMANDS
    }

    /// Parses commands until `end` (a closing `)` or backtick) or the end of input.
    fn parse_list(&mut self, end: Option<char>, mut pipeline: usize, mut stage: usize) {
        let mut cmd = Building::default();
        // A command (word, redirection, group) since the last operator; an operator (`|`,
        // `&&`, `||`) still waiting for its right-hand command.
        let mut have_command = false;
        let mut pending = false;
        loop {
            if self.full() {
                self.opaque(format!("more than {MAX_COMMANDS} commands"));
                self.pos = self.chars.len();
                return;
            }
            let at_end = match self.peek() {
                None => true,
                Some(c) => Some(c) == end,
            };
            if at_end {
                if pending {
                    self.opaque("an operator without a command after it");
                }
                self.finish(&mut cmd, pipeline, stage);
                if self.peek().is_some() {
                    self.pos += 1;
                } else if end.is_some() {
                    self.opaque("unterminated subshell or substitution");
                }
                return;
            }
            let Some(c) = self.peek() else { return };
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' if pending => self.pos += 1,
                '\n' | ';' => {
                    if c == ';' && !have_command {
                        self.opaque("`;` without a command before it");
                    }
                    self.pos += 1;
                    self.finish(&mut cmd, pipeline, stage);
                    if self.peek() == Some(';') {
                        self.opaque("`;;` outside a case");
                        self.pos += 1;
                    }
                    pipeline = self.new_pipeline();
                    stage = 0;
                    have_command = false;
                }
                '&' | '|' => {
                    let next = self.peek_at(1);
                    if c == '&' && next == Some('>') {
                        self.redirect(&mut cmd);
                        have_command = true;
                        pending = false;
                        continue;
                    }
                    if !have_command {
                        self.opaque(format!("`{c}` without a command before it"));
                    }
                    self.pos += 1;
                    self.finish(&mut cmd, pipeline, stage);
                    if (c == '|' && next == Some('|')) || (c == '&' && next == Some('&')) {
                        self.pos += 1;
                        pipeline = self.new_pipeline();
                        stage = 0;
                        pending = true;
                    } else if c == '|' {
                        if next == Some('&') {
                            self.pos += 1;
                        }
                        stage += 1;
                        pending = true;
                    } else {
                        pipeline = self.new_pipeline();
                        stage = 0;
                    }
                    have_command = false;
                }
                '(' if self.peek_at(1) == Some('(') && cmd.is_empty() && !cmd.loop_header => {
                    self.pos += 2;
                    if !self.descend() {
                        return;
                    }
                    self.arithmetic_command(&mut cmd);
                    self.depth -= 1;
                    (have_command, pending) = (true, false);
                }
                '(' => {
                    self.pos += 1;
                    if !cmd.words.is_empty() || !cmd.assignments.is_empty() || cmd.loop_header {
                        self.opaque("function definition, arithmetic loop or `(` inside a command");
                    }
                    if !self.descend() {
                        return;
                    }
                    // A subshell's commands keep the enclosing pipeline position.
                    self.parse_list(Some(')'), pipeline, stage);
                    self.depth -= 1;
                    (have_command, pending) = (true, false);
                }
                ')' => {
                    self.pos += 1;
                    self.opaque("unbalanced `)`");
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    let word = self.process_substitution(&mut cmd);
                    cmd.words.push(word);
                    (have_command, pending) = (true, false);
                }
                '<' | '>' => {
                    self.redirect(&mut cmd);
                    (have_command, pending) = (true, false);
                }
                d if d.is_ascii_digit() && self.fd_redirect_ahead() => {
                    self.redirect(&mut cmd);
                    (have_command, pending) = (true, false);
                }
                _ => {
                    let word = self.read_word(end, &mut cmd);
                    self.place_word(&mut cmd, word);
                    (have_command, pending) = (true, false);
                }
            }
        }
    }

    /// Enters one nesting level; false (and opaque, input dropped) when too deep.
    fn descend(&mut self) -> bool {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            self.opaque(format!("nested deeper than {MAX_DEPTH} levels"));
            self.pos = self.chars.len();
            return false;
        }
        true
    }

    fn place_word(&mut self, cmd: &mut Building, word: Word) {
        if cmd.words.is_empty() && std::mem::take(&mut cmd.after_time) && word.text == "-p" {
            return;
        }
        if cmd.words.is_empty() {
            if !word.glob && is_assignment(&word) {
                cmd.assignments.push(word);
                return;
            }
            if cmd.assignments.is_empty() && !word.dynamic {
                if KEYWORDS_SKIPPED.contains(&word.text.as_str()) {
                    cmd.after_time = word.text == "time";
                    return;
                }
                if matches!(word.text.as_str(), "for" | "select") && !cmd.loop_header {
                    cmd.loop_header = true;
                    return;
                }
                if KEYWORDS_OPAQUE.contains(&word.text.as_str()) {
                    self.opaque(format!("`{}` is not interpreted", word.text));
                    return;
                }
            }
        }
        cmd.words.push(word);
    }

    /// `((…))` as a command: arithmetic evaluated at run time (substitutions inside still run).
    fn arithmetic_command(&mut self, cmd: &mut Building) {
        let mut depth = 2usize;
        let mut scratch = Word::default();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                '$' => self.dollar(&mut scratch, cmd, true),
                '`' => self.backticks(&mut scratch, cmd),
                _ => {}
            }
        }
        self.opaque("an arithmetic command `((…))` is evaluated at run time");
    }

    fn finish(&mut self, cmd: &mut Building, pipeline: usize, stage: usize) {
        let built = std::mem::take(cmd);
        if built.is_empty() || built.loop_header {
            return;
        }
        let origin = if self.in_substitution > 0 { Origin::Substitution } else { Origin::Direct };
        self.script.commands.push(SimpleCommand {
            assignments: built.assignments,
            words: built.words,
            redirects: built.redirects,
            pipeline,
            stage,
            origin,
            substitutions: built.substitutions,
        });
    }
}

fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else { return false };
    if word.dynamic_at.is_some_and(|at| at <= name.len()) {
        return false;
    }
    let name = name.strip_suffix('+').unwrap_or(name);
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests;
