//! Expansions of the shell parser: `$…`, `${…}`, arithmetic, `$'…'`, substitutions, backticks.

use super::lex::mark_dynamic;
use super::{Building, Origin, Parser, Word};

impl Parser<'_> {
    /// After a `$`: an expansion (dynamic), a substitution, `$'…'`, or a literal dollar.
    pub(super) fn dollar(&mut self, word: &mut Word, cmd: &mut Building, quoted: bool) {
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                if self.descend() {
                    self.arithmetic(cmd, 2);
                    self.depth -= 1;
                }
                mark_dynamic(word);
            }
            Some('[') => {
                self.pos += 1;
                if self.descend() {
                    self.skip_bracketed('[', ']', cmd);
                    self.depth -= 1;
                }
                self.opaque("arithmetic expansion `$[…]` is not interpreted");
                mark_dynamic(word);
            }
            Some('(') => {
                self.pos += 1;
                self.substitution(')', cmd);
                mark_dynamic(word);
            }
            Some('{') => {
                self.pos += 1;
                if self.descend() {
                    self.parameter(word, cmd);
                    self.depth -= 1;
                }
                mark_dynamic(word);
            }
            Some('\'') if !quoted => {
                self.pos += 1;
                self.ansi_c_quoted(word);
            }
            Some('"') if !quoted => {}
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

    /// `${…}`: the value is only known at run time; substitutions inside it still run.
    fn parameter(&mut self, word: &mut Word, cmd: &mut Building) {
        let start = self.pos;
        self.skip_bracketed('{', '}', cmd);
        mark_dynamic(word);
        let end = self.pos.saturating_sub(1).max(start).min(self.chars.len());
        let inner: String = self.chars[start..end].iter().collect();
        if inner == "HOME" {
            word.text.push_str("$HOME");
        }
        if inner.contains('[') {
            self.opaque("an array subscript in `${…}` is evaluated at run time");
        }
        if inner.contains('@') || inner.starts_with('!') {
            self.opaque("`${…}` with `@` operators or indirection is not interpreted");
        }
    }

    /// `$((…))`: arithmetic is evaluated at run time (array subscripts in it can run commands).
    fn arithmetic(&mut self, cmd: &mut Building, open: usize) {
        let mut depth = open;
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
                '$' | '`' => {
                    let mut scratch = Word::default();
                    if c == '$' {
                        self.dollar(&mut scratch, cmd, true);
                    } else {
                        self.backticks(&mut scratch, cmd);
                    }
                }
                _ => {}
            }
        }
        if depth > 0 {
            self.opaque("unterminated expansion");
        }
        self.opaque("arithmetic `$((…))` is evaluated at run time");
    }

    /// Skips to the matching `close`, parsing the substitutions and quotes inside.
    pub(super) fn skip_bracketed(&mut self, open: char, close: char, cmd: &mut Building) {
        let mut depth = 1usize;
        let mut scratch = Word::default();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '\'' if open == '{' => {
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => self.double_quoted(&mut scratch, cmd),
                '$' => self.dollar(&mut scratch, cmd, true),
                '`' => self.backticks(&mut scratch, cmd),
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
        self.pos = self.pos.min(self.chars.len());
        self.opaque("unterminated expansion");
    }

    /// `$'…'`: escapes decoded as bash does; a NUL (which ends the string in bash) is opaque.
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
                    match self.ansi_c_escape(next) {
                        Some('\0') => {
                            self.opaque("a NUL byte in `$'…'` (bash cuts the word there)")
                        }
                        Some(decoded) => word.text.push(decoded),
                        None => mark_dynamic(word),
                    }
                }
                _ => word.text.push(c),
            }
        }
    }

    /// One escape of `$'…'` after the backslash; `None` when it cannot be decoded.
    fn ansi_c_escape(&mut self, next: char) -> Option<char> {
        let simple = match next {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(next),
            _ => None,
        };
        if simple.is_some() {
            return simple;
        }
        let (radix, max) = match next {
            '0'..='7' => {
                self.pos -= 1;
                (8, 3)
            }
            'x' => (16, 2),
            // `\u` and `\U` depend on the locale (in C, bash keeps them as written).
            'u' | 'U' => return None,
            'c' => {
                let control = self.peek()?;
                self.pos += 1;
                return char::from_u32(u32::from(control) & 0x1f);
            }
            _ => return None,
        };
        let mut value = 0u32;
        let mut digits = 0;
        while digits < max
            && let Some(d) = self.peek().and_then(|c| c.to_digit(radix))
        {
            value = value * radix + d;
            self.pos += 1;
            digits += 1;
        }
        if digits == 0 {
            return None;
        }
        if radix == 8 {
            value &= 0xff;
        }
        if value > 0x7f && matches!(next, 'x' | '0'..='7') {
            // A raw byte, not a character: bash writes the byte as is.
            return None;
        }
        char::from_u32(value)
    }

    /// `<(…)` or `>(…)`: the commands run, the word is a file name known at run time.
    pub(super) fn process_substitution(&mut self, cmd: &mut Building) -> Word {
        let start = self.pos;
        self.pos += 2;
        self.substitution(')', cmd);
        Word {
            dynamic: true,
            dynamic_at: Some(0),
            unquoted_expansion: true,
            raw: self.chars[start..self.pos.min(self.chars.len())].iter().collect(),
            ..Word::default()
        }
    }

    /// Parses the commands of a substitution up to `end` and links them to `cmd`.
    pub(super) fn substitution(&mut self, end: char, cmd: &mut Building) {
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

    /// `` `…` ``: the text up to the closing backtick, unescaped, parsed as a script.
    pub(super) fn backticks(&mut self, word: &mut Word, cmd: &mut Building) {
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
            command.origin = Origin::Substitution;
            command.substitutions.iter_mut().for_each(|i| *i += offset);
            command.pipeline =
                *pipelines.entry(command.pipeline).or_insert_with(|| self.new_pipeline());
            self.script.commands.push(command);
            cmd.substitutions.push(self.script.commands.len() - 1);
        }
    }
}
