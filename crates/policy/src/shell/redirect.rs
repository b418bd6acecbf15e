//! Redirections and here-documents of the shell parser.

use super::{Building, Parser, Redirect, RedirectKind, Word};

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
            self.heredocs += 1;
            if self.heredocs > super::MAX_HEREDOCS {
                self.opaque(format!("more than {} here-documents", super::MAX_HEREDOCS));
                self.pos = self.chars.len();
                return;
            }
            let quoted =
                self.chars[raw_start..self.pos].iter().any(|c| matches!(c, '\'' | '"' | '\\'));
            if target.dynamic && !quoted {
                self.opaque("a here-document delimiter with `$` is not interpreted");
            }
            self.check_rest_of_line();
            let body = self.take_heredoc_body(&target.text, strip_tabs);
            let target = if quoted {
                Word { text: body, ..Word::default() }
            } else {
                self.expand_body(&body, cmd)
            };
            cmd.redirects.push(Redirect { kind, target });
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

    /// A here-document's body starts after the line that holds its operator; when the rest of
    /// that line has quotes, substitutions or escapes that could span lines, the parser and
    /// bash could disagree on where the body starts.
    fn check_rest_of_line(&mut self) {
        let rest = self.chars[self.pos..].iter().take_while(|&&c| c != '\n');
        let mut previous = ' ';
        for &c in rest {
            if matches!(c, '\'' | '"' | '`' | '\\') || (previous == '$' && c == '(') {
                self.opaque("a here-document whose line goes on with quotes or substitutions");
                return;
            }
            previous = c;
        }
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
}
