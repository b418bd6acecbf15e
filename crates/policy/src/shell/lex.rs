//! Words, quotes, expansions, substitutions and redirections of the shell parser.

use super::{Building, Parser, Redirect, RedirectKind, Word};

/// Marks a word as known only at run time from its current length on.
fn mark_dynamic(word: &mut Word) {
    word.dynamic = true;
    word.dynamic_at.get_or_insert(word.text.len());
}

/// Characters that end an unquoted word.
fn ends_word(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

impl Parser<'_> {
    /// True when the digits at the cursor are a descriptor number before `<` or `>`.
    pub(super) fn fd_redirect_ahead(&self) -> bool {
        let mut i = self.pos;
        while self.chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        matches!(self.chars.get(i), Some('<' | '>'))
    }

    /// Reads one redirection (operator and target) into `cmd`.
    pub(super) fn redirect(&mut self, cmd: &mut Building) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let rest: String =
            self.chars[self.pos..self.chars.len().min(self.pos + 3)].iter().collect();
        let (kind, len, heredoc) = if rest.starts_with("<<<") {
            (RedirectKind::Input, 3, false)
        } else if rest.starts_with("<<") {
            (RedirectKind::Input, 2, true)
        } else if rest.starts_with("&>>") {
            (RedirectKind::Write, 3, false)
        } else if rest.starts_with(">>") || rest.starts_with(">|") || rest.starts_with("&>") {
            (RedirectKind::Write, 2, false)
        } else if rest.starts_with(">&") || rest.starts_with("<&") {
            (RedirectKind::Dup, 2, false)
        } else if rest.starts_with("<>") {
            (RedirectKind::Write, 2, false)
        } else if rest.starts_with('<') {
            (RedirectKind::Read, 1, false)
        } else {
            (RedirectKind::Write, 1, false)
        };
        self.pos += len;
        let strip_tabs = heredoc && self.peek() == Some('-');
        if strip_tabs {
            self.pos += 1;
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let raw_start = self.pos;
        let target = self.read_word(None, cmd);
        if target.text.is_empty() && !target.dynamic {
            self.opaque("redirection without a target");
        }
        if heredoc {
            let quoted =
                self.chars[raw_start..self.pos].iter().any(|c| matches!(c, '\'' | '"' | '\\'));
            let body = self.take_heredoc_body(&target.text, strip_tabs);
            let dynamic = !quoted && (body.contains('$') || body.contains('`'));
            cmd.redirects.push(Redirect {
                kind,
                target: Word { dynamic, dynamic_at: dynamic.then_some(0), text: body, glob: false },
            });
            return;
        }
        let kind = match kind {
            // `>& file` writes a file; `>&2` / `>&-` only duplicate.
            RedirectKind::Dup
                if !(target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit())) =>
            {
                RedirectKind::Write
            }
            other => other,
        };
        cmd.redirects.push(Redirect { kind, target });
    }

    /// Cuts the body of a here-document (the lines after the next newline, up to the delimiter)
    /// out of the input and returns it.
    fn take_heredoc_body(&mut self, delimiter: &str, strip_tabs: bool) -> String {
        let Some(newline) = (self.pos..self.chars.len()).find(|&i| self.chars[i] == '\n') else {
            self.opaque("here-document without a body");
            return String::new();
        };
        let start = newline + 1;
        let mut line_start = start;
        let mut body = String::new();
        loop {
            let line_end = (line_start..self.chars.len())
                .find(|&i| self.chars[i] == '\n')
                .unwrap_or(self.chars.len());
            let line: String = self.chars[line_start..line_end].iter().collect();
            let line = if strip_tabs { line.trim_start_matches('\t').to_owned() } else { line };
            if line == delimiter {
                let cut_end = (line_end + 1).min(self.chars.len());
                self.chars.drain(start..cut_end);
                return body;
            }
            body.push_str(&line);
            body.push('\n');
            if line_end >= self.chars.len() {
                self.opaque("here-document without its delimiter line");
                self.chars.truncate(start);
                return body;
            }
            line_start = line_end + 1;
        }
    }

    /// `<(…)` or `>(…)`: the commands run, the word is a file name known at run time.
    pub(super) fn process_substitution(&mut self, cmd: &mut Building) -> Word {
        self.pos += 2;
        self.substitution(')', cmd);
        Word { text: String::new(), dynamic: true, glob: false, dynamic_at: Some(0) }
    }

    /// Parses the commands of a substitution up to `end` and links them to `cmd`.
    fn substitution(&mut self, end: char, cmd: &mut Building) {
        if !self.descend() {
            return;
        }
        let before = self.script.commands.len();
        self.in_substitution += 1;
        let pipeline = self.new_pipeline();
        self.parse_list(Some(end), pipeline, 0);
        self.in_substitution -= 1;
        self.depth -= 1;
        cmd.substitutions.extend(before..self.script.commands.len());
    }

    /// Reads one word, stopping at an operator, a blank or `end`.
    pub(super) fn read_word(&mut self, end: Option<char>, cmd: &mut Building) -> Word {
        let mut word = Word::default();
        let mut unquoted_brace = false;
        while let Some(c) = self.peek() {
            if ends_word(c) || Some(c) == end {
                break;
            }
            self.pos += 1;
            match c {
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(next) => {
                        self.pos += 1;
                        word.text.push(next);
                    }
                    None => {}
                },
                '\'' => self.single_quoted(&mut word),
                '"' => self.double_quoted(&mut word, cmd),
                '$' => self.dollar(&mut word, cmd),
                '`' => self.backticks(&mut word, cmd),
                '*' | '?' | '[' => {
                    word.glob = true;
                    word.text.push(c);
                }
                '{' => {
                    unquoted_brace = true;
                    word.text.push(c);
                }
                ',' | '.' if unquoted_brace => {
                    // `s{u,}do` and `{a..z}` expand to other words.
                    if c == ',' || self.peek() == Some('.') {
                        mark_dynamic(&mut word);
                    }
                    word.text.push(c);
                }
                _ => word.text.push(c),
            }
        }
        word
    }

    fn single_quoted(&mut self, word: &mut Word) {
        loop {
            match self.peek() {
                None => {
                    self.opaque("unterminated single quote");
                    return;
                }
                Some('\'') => {
                    self.pos += 1;
                    return;
                }
                Some(c) => {
                    self.pos += 1;
                    word.text.push(c);
                }
            }
        }
    }

    fn double_quoted(&mut self, word: &mut Word, cmd: &mut Building) {
        loop {
            let Some(c) = self.peek() else {
                self.opaque("unterminated double quote");
                return;
            };
            self.pos += 1;
            match c {
                '"' => return,
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        self.pos += 1;
                        word.text.push(next);
                    }
                    _ => word.text.push('\\'),
                },
                '$' => self.dollar(word, cmd),
                '`' => self.backticks(word, cmd),
                _ => word.text.push(c),
            }
        }
    }

    /// After a `$`: an expansion (dynamic), a substitution, `$'…'`, or a literal dollar.
    fn dollar(&mut self, word: &mut Word, cmd: &mut Building) {
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                self.skip_balanced('(', ')', 2);
                mark_dynamic(word);
            }
            Some('(') => {
                self.pos += 1;
                self.substitution(')', cmd);
                mark_dynamic(word);
            }
            Some('{') => {
                self.pos += 1;
                let start = self.pos;
                self.skip_balanced('{', '}', 1);
                mark_dynamic(word);
                if self.chars.get(start..self.pos) == Some(&['H', 'O', 'M', 'E', '}'][..]) {
                    word.text.push_str("$HOME");
                }
            }
            Some('\'') => {
                self.pos += 1;
                self.ansi_c_quoted(word);
            }
            Some('"') => {}
            Some(c) if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c) => {
                let start = self.pos;
                if c.is_ascii_alphabetic() || c == '_' {
                    while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                        self.pos += 1;
                    }
                } else {
                    self.pos += 1;
                }
                mark_dynamic(word);
                if self.chars[start..self.pos] == ['H', 'O', 'M', 'E'] {
                    // Kept so paths under the home directory are still recognised.
                    word.text.push_str("$HOME");
                }
            }
            _ => word.text.push('$'),
        }
    }

    /// Skips to the `depth`-th unmatched `close` (arithmetic, `${…}`); contents stay unknown.
    fn skip_balanced(&mut self, open: char, close: char, mut depth: usize) {
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return;
                }
            }
        }
        self.opaque("unterminated expansion");
    }

    /// `$'…'`: simple escapes decoded; any other escape makes the word dynamic.
    fn ansi_c_quoted(&mut self, word: &mut Word) {
        loop {
            let Some(c) = self.peek() else {
                self.opaque("unterminated $'…' quote");
                return;
            };
            self.pos += 1;
            match c {
                '\'' => return,
                '\\' => {
                    let Some(next) = self.peek() else { continue };
                    self.pos += 1;
                    match next {
                        'n' => word.text.push('\n'),
                        't' => word.text.push('\t'),
                        '\\' | '\'' | '"' => word.text.push(next),
                        _ => mark_dynamic(word),
                    }
                }
                _ => word.text.push(c),
            }
        }
    }

    /// `` `…` ``: the text up to the closing backtick, unescaped, parsed as a script.
    fn backticks(&mut self, word: &mut Word, cmd: &mut Building) {
        let mut inner = String::new();
        loop {
            let Some(c) = self.peek() else {
                self.opaque("unterminated backtick");
                break;
            };
            self.pos += 1;
            match c {
                '`' => break,
                '\\' => match self.peek() {
                    Some(next @ ('`' | '\\' | '$')) => {
                        self.pos += 1;
                        inner.push(next);
                    }
                    _ => inner.push('\\'),
                },
                _ => inner.push(c),
            }
        }
        mark_dynamic(word);
        let nested = super::parse_at_depth(&inner, self.depth + 1);
        for why in nested.opaque {
            self.opaque(why);
        }
        let offset = self.script.commands.len();
        let mut pipelines = std::collections::HashMap::new();
        for mut command in nested.commands {
            command.origin = super::Origin::Substitution;
            command.substitutions.iter_mut().for_each(|i| *i += offset);
            command.pipeline =
                *pipelines.entry(command.pipeline).or_insert_with(|| self.new_pipeline());
            self.script.commands.push(command);
            cmd.substitutions.push(self.script.commands.len() - 1);
        }
    }
}
