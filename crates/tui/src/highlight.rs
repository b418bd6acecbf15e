//! Syntax colour for a diff's code: Sublime Text grammars (`syntect`) parse the lines on
//! screen, from their hunk's start (at most [`LEAD`] lines above the screen), into a few kinds
//! drawn in the terminal's own palette, so a light theme keeps them readable. Parsed once per
//! diff and screen; a line too long, or one a grammar cannot finish, stays plain.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

use crate::diff::{Diff, DiffLine};

/// Lines parsed above the screen to find a multi-line comment or string started there.
pub const LEAD: usize = 200;

/// Lines longer than this (bytes) are drawn plain.
pub const LONGEST: usize = 1_000;

/// Rows kept coloured before the cache starts again (a long scroll through a huge diff).
const KEPT: usize = 20_000;

/// What a piece of code is, as far as its colour goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hue {
    Plain,
    Comment,
    /// A string literal.
    Text,
    /// A number, `true`, a named constant.
    Constant,
    /// A keyword, or a type or storage word (`fn`, `let`, `pub`).
    Keyword,
    /// A function's or type's name where it is defined.
    Name,
}

/// A row's code (its text after the `+`/`-`/` ` marker) in pieces: byte ranges and their hue.
pub type Pieces = Vec<(Hue, Range<usize>)>;

/// The grammars, loaded once (the first diff shown).
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_nonewlines)
}

/// The scope prefixes each hue stands for, innermost match wins.
fn hue_scopes() -> &'static [(Scope, Hue)] {
    static SCOPES: OnceLock<Vec<(Scope, Hue)>> = OnceLock::new();
    SCOPES.get_or_init(|| {
        [
            ("comment", Hue::Comment),
            ("string", Hue::Text),
            ("constant", Hue::Constant),
            ("keyword", Hue::Keyword),
            ("storage", Hue::Keyword),
            ("entity.name", Hue::Name),
        ]
        .into_iter()
        .filter_map(|(name, hue)| Scope::new(name).ok().map(|s| (s, hue)))
        .collect()
    })
}

fn hue_of(stack: &ScopeStack) -> Hue {
    for scope in stack.as_slice().iter().rev() {
        if let Some((_, hue)) = hue_scopes().iter().find(|(prefix, _)| prefix.is_prefix_of(*scope))
        {
            return *hue;
        }
    }
    Hue::Plain
}

/// The grammar for a file named `path` (by its extension; TypeScript read as JavaScript).
pub fn syntax_for(path: &str) -> Option<&'static SyntaxReference> {
    let name = path.rsplit('/').next()?;
    let (_, extension) = name.rsplit_once('.')?;
    let extension = match extension {
        "ts" | "tsx" | "mts" | "cts" | "jsx" | "mjs" | "cjs" => "js",
        other => other,
    };
    syntaxes().find_syntax_by_extension(extension)
}

/// One side of a hunk being parsed.
struct Side {
    state: ParseState,
    stack: ScopeStack,
}

impl Side {
    fn new(syntax: &SyntaxReference) -> Side {
        Side { state: ParseState::new(syntax), stack: ScopeStack::new() }
    }

    /// Parses `code`, the next line of this side, into pieces (none if a grammar fails: the
    /// state then starts again at the next line).
    fn parse(&mut self, code: &str, syntax: &SyntaxReference) -> Option<Pieces> {
        let Ok(ops) = self.state.parse_line(code, syntaxes()) else {
            *self = Side::new(syntax);
            return None;
        };
        let mut pieces: Pieces = Vec::new();
        let mut from = 0;
        let push = |hue: Hue, range: Range<usize>, pieces: &mut Pieces| {
            if range.is_empty() {
                return;
            }
            match pieces.last_mut() {
                Some((last, r)) if *last == hue && r.end == range.start => r.end = range.end,
                _ => pieces.push((hue, range)),
            }
        };
        for (at, op) in ops {
            let at = at.min(code.len());
            push(hue_of(&self.stack), from..at, &mut pieces);
            if self.stack.apply(&op).is_err() {
                *self = Side::new(syntax);
                return None;
            }
            from = at;
        }
        push(hue_of(&self.stack), from..code.len(), &mut pieces);
        Some(pieces)
    }
}

/// The colours of the rows drawn so far, for one diff.
#[derive(Default)]
pub struct Colours {
    /// Which diff they are of ([`Diff::generation`]).
    generation: Option<u64>,
    rows: HashMap<usize, Pieces>,
}

impl std::fmt::Debug for Colours {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Colours").field("rows", &self.rows.len()).finish()
    }
}

impl Colours {
    /// The pieces of `diff`'s rows `top .. top + height` (a code row without an entry is drawn
    /// plain), parsing what is not known yet.
    pub fn screen(&mut self, diff: &Diff, top: usize, height: usize) -> &HashMap<usize, Pieces> {
        if self.generation != Some(diff.generation) || self.rows.len() > KEPT {
            self.rows.clear();
            self.generation = Some(diff.generation);
        }
        let end = (top + height).min(diff.rows.len());
        let is_code =
            |kind| matches!(kind, DiffLine::Added | DiffLine::Removed | DiffLine::Context);
        let missing = (top..end).any(|i| is_code(diff.rows[i].kind) && !self.rows.contains_key(&i));
        if missing {
            self.parse(diff, top, end);
        }
        &self.rows
    }

    /// Parses rows `top .. end`, each hunk from its start (at most [`LEAD`] rows above `top`),
    /// each file in its own grammar.
    fn parse(&mut self, diff: &Diff, top: usize, end: usize) {
        let mut start = top;
        while start > 0
            && top - start < LEAD
            && !matches!(diff.rows[start - 1].kind, DiffLine::Hunk | DiffLine::File)
        {
            start -= 1;
        }
        let mut syntax = file_of(diff, start).and_then(syntax_for);
        let mut sides = syntax.map(|s| (Side::new(s), Side::new(s)));
        for i in start..end {
            let row = &diff.rows[i];
            match row.kind {
                DiffLine::File if row.text.starts_with("diff --git ") => {
                    syntax = file_of(diff, i + 1).and_then(syntax_for);
                    sides = syntax.map(|s| (Side::new(s), Side::new(s)));
                    continue;
                }
                DiffLine::Hunk => {
                    sides = syntax.map(|s| (Side::new(s), Side::new(s)));
                    continue;
                }
                DiffLine::Added | DiffLine::Removed | DiffLine::Context => {}
                DiffLine::File | DiffLine::Summary | DiffLine::Comment => continue,
            }
            let (Some(syntax), Some((new, old))) = (syntax, sides.as_mut()) else { continue };
            let Some(code) = row.text.get(1..).filter(|c| c.len() <= LONGEST) else { continue };
            let pieces = match row.kind {
                DiffLine::Removed => old.parse(code, syntax),
                DiffLine::Context => {
                    let _ = old.parse(code, syntax);
                    new.parse(code, syntax)
                }
                _ => new.parse(code, syntax),
            };
            if let (true, Some(pieces)) = (i >= top, pieces) {
                self.rows.insert(i, pieces);
            }
        }
    }
}

/// The path of the file row `row` belongs to: its `diff --git a/… b/PATH` header above.
fn file_of(diff: &Diff, row: usize) -> Option<&str> {
    let header = diff.rows[..row.min(diff.rows.len())]
        .iter()
        .rev()
        .find(|r| r.kind == DiffLine::File && r.text.starts_with("diff --git "))?;
    header.text.rsplit(" b/").next().map(|p| p.trim_end_matches(['\t', '"']))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hues(pieces: &Pieces, code: &str) -> Vec<(Hue, String)> {
        pieces.iter().map(|(h, r)| (*h, code[r.clone()].to_owned())).collect()
    }

    #[test]
    fn rust_code_is_cut_into_keywords_strings_comments_and_names() {
        let syntax = syntax_for("src/lib.rs").expect("Rust is a default grammar");
        let mut side = Side::new(syntax);
        let code = "fn main() { let s = \"hi\"; } // done";
        let pieces = side.parse(code, syntax).unwrap();
        let got = hues(&pieces, code);
        assert!(got.contains(&(Hue::Keyword, "fn".into())), "{got:?}");
        assert!(got.contains(&(Hue::Name, "main".into())), "{got:?}");
        assert!(got.iter().any(|(h, t)| *h == Hue::Text && t.contains("hi")), "{got:?}");
        assert!(got.iter().any(|(h, t)| *h == Hue::Comment && t.contains("done")), "{got:?}");
        let covered: usize = pieces.iter().map(|(_, r)| r.len()).sum();
        assert_eq!(covered, code.len(), "every byte has a hue");
    }

    #[test]
    fn a_comment_opened_on_one_line_colours_the_next() {
        let syntax = syntax_for("a.rs").unwrap();
        let mut side = Side::new(syntax);
        side.parse("/* opened", syntax).unwrap();
        let pieces = side.parse("still inside", syntax).unwrap();
        assert_eq!(pieces, [(Hue::Comment, 0.."still inside".len())]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn any_agent_text_is_cut_into_pieces_on_its_own_char_boundaries(
            lines in proptest::collection::vec("[ -~é\\u{1b}\"'/*{}()<>#]{0,1200}", 1..6),
        ) {
            let patch: String = std::iter::once(format!(
                "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1,{n} +1,{n} @@\n",
                n = lines.len() * 2
            ))
            .chain(lines.iter().flat_map(|l| [format!("+{l}\n"), format!("-{l}\n")]))
            .collect();
            let facts: nucleic_protocol::GitFacts = serde_json::from_value(serde_json::json!({
                "baseBranch": "main", "baseSHA": "a", "ahead": 0, "behind": 0, "conflicts": [],
                "files": [], "patch": patch, "turns": []
            }))
            .unwrap();
            let diff = Diff::of("s", &facts);
            let mut colours = Colours::default();
            let rows = colours.screen(&diff, 0, diff.rows.len()).clone();
            for (i, pieces) in &rows {
                let code = &diff.rows[*i].text[1..];
                proptest::prop_assert!(code.len() <= LONGEST);
                for (_, r) in pieces {
                    proptest::prop_assert!(r.end <= code.len());
                    proptest::prop_assert!(code.is_char_boundary(r.start) && code.is_char_boundary(r.end));
                }
            }
        }
    }

    #[test]
    fn unknown_files_have_no_grammar() {
        assert!(syntax_for("notes.zzz").is_none());
        assert!(syntax_for("Makefile-without-dot").is_none());
        assert!(syntax_for("web/app.tsx").is_some(), "read as JavaScript");
    }
}
