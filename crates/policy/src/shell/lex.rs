//! Words of the shell parser: quoting, escapes, tilde and brace forms.

use super::{Building, Parser, Word};

/// Marks a word as known only at run time from its current length on.
pub(super) fn mark_dynamic(word: &mut Word) {
    word.dynamic = true;
    word.dynamic_at.get_or_insert(word.text.len());
}

/// Characters that end an unquoted word (bash's metacharacters; `\r` is an ordinary one).
pub(super) fn ends_word(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

impl Parser<'_> {
    /// Reads one word, stopping at an operator, a blank or `end`.
    pub(super) fn read_word(&mut self, end: Option<char>, cmd: &mut Building) -> Word {
        let start = self.pos;
        let mut word = Word::default();
        let mut unquoted_brace = false;
        // The previous character was an unquoted start of word, `=` or `:` (tilde positions).
        let mut tilde_position = true;
        while let Some(c) = self.peek() {
            if ends_word(c) || Some(c) == end {
                break;
            }
            self.pos += 1;
            let at_tilde_position = tilde_position;
            tilde_position = false;
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
                '$' => {
                    if !matches!(self.peek(), Some('\'' | '"')) {
                        word.unquoted_expansion = true;
                    }
                    self.dollar(&mut word, cmd, false);
                }
                '`' => {
                    word.unquoted_expansion = true;
                    self.backticks(&mut word, cmd);
                }
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
                '~' if at_tilde_position => {
                    self.tilde(&mut word, end);
                }
                '=' | ':' => {
                    tilde_position = true;
                    word.text.push(c);
                }
                _ => word.text.push(c),
            }
        }
        // The source text is kept for messages about words the policy cannot pin down.
        if word.dynamic || word.glob {
            word.raw = self.chars[start..self.pos].iter().collect();
        }
        word
    }

    /// `~` at a tilde position: `~` and `~/…` are the home directory; `~user`, `~+`, `~-`,
    /// `~2` are only known at run time.
    fn tilde(&mut self, word: &mut Word, end: Option<char>) {
        word.text.push('~');
        match self.peek() {
            None | Some('/' | ':') => {}
            Some(c) if ends_word(c) || Some(c) == end => {}
            Some(_) => mark_dynamic(word),
        }
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

    pub(super) fn double_quoted(&mut self, word: &mut Word, cmd: &mut Building) {
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
                '$' => self.dollar(word, cmd, true),
                '`' => self.backticks(word, cmd),
                _ => word.text.push(c),
            }
        }
    }

    /// The text of an unquoted here-document body: expansions and substitutions run, as in
    /// double quotes (but `"` is literal). Substitutions are linked to `cmd`.
    pub(super) fn expand_body(&mut self, body: &str, cmd: &mut Building) -> Word {
        let saved_chars = std::mem::replace(&mut self.chars, body.chars().collect());
        let saved_pos = std::mem::replace(&mut self.pos, 0);
        let mut word = Word::default();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(next @ ('$' | '`' | '\\')) => {
                        self.pos += 1;
                        word.text.push(next);
                    }
                    _ => word.text.push('\\'),
                },
                '$' => self.dollar(&mut word, cmd, true),
                '`' => self.backticks(&mut word, cmd),
                _ => word.text.push(c),
            }
        }
        self.chars = saved_chars;
        self.pos = saved_pos;
        if word.dynamic {
            word.raw = body.to_owned();
        }
        word
    }
}
