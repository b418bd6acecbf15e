//! The transcript laid out for the screen: each row wrapped to the width, and only the rows
//! that fit on screen laid out at all (from the anchored row up or down until the screen is
//! full), so a session of 100,000 events costs what one screenful costs.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use crate::app::Anchor;
use crate::transcript::{Row, RowKind, Tone, ToolOutcome};

/// Lines of an expanded tool result shown (the rest is counted).
pub const RESULT_LINES: usize = 40;
/// Lines of an expanded tool input shown.
pub const INPUT_LINES: usize = 20;

/// How much of a row a screen can show: all of it, or (for a row at the top or bottom edge of
/// a screen of that many lines) its first or last lines only. A reply of megabytes streamed into
/// one row is then laid out a screenful at a time too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Whole,
    Head(usize),
    Tail(usize),
}

/// The part of `text` that can fill `window` at `width` columns, and whether it is cut before
/// its start. Exact from a paragraph start (a cut is moved to one when the window holds one).
fn windowed(text: &str, width: usize, window: Window) -> (&str, bool) {
    let lines = match window {
        Window::Whole => return (text, false),
        Window::Head(n) | Window::Tail(n) => n,
    };
    // Every wrapped line holds at least one character of at most four bytes, except empty ones,
    // which take a newline each: this many bytes always fill the window.
    let budget = (lines + 1) * (width.max(1) + 1) * 4;
    if text.len() <= budget * 2 {
        return (text, false);
    }
    match window {
        Window::Head(_) => {
            let mut end = budget;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            (&text[..end], false)
        }
        Window::Tail(_) | Window::Whole => {
            let mut start = text.len() - budget * 2;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            // From the next paragraph start when there is one in the first half.
            let mut half = start + budget;
            while !text.is_char_boundary(half) {
                half += 1;
            }
            if let Some(at) = text[start..half].find('\n') {
                start += at + 1;
            }
            (&text[start..], true)
        }
    }
}

/// `text` (one paragraph, already sanitized) cut into pieces of at most `width` columns,
/// breaking at the last space when there is one.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        let mut used = 0;
        for c in paragraph.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width && !line.is_empty() {
                match line.rfind(' ').filter(|&at| at > 0 && c != ' ') {
                    Some(at) => {
                        let rest = line.split_off(at + 1);
                        out.push(line.trim_end().to_owned());
                        used = rest.chars().map(|c| c.width().unwrap_or(0)).sum();
                        line = rest;
                    }
                    None => {
                        out.push(std::mem::take(&mut line));
                        used = 0;
                    }
                }
                if c == ' ' && line.is_empty() {
                    continue;
                }
            }
            line.push(c);
            used += w;
        }
        out.push(line);
    }
    out
}

fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

fn tone_style(tone: Tone) -> Style {
    match tone {
        Tone::Info => dim(),
        Tone::Ok => Style::default().fg(Color::Green),
        Tone::Warn => Style::default().fg(Color::Magenta),
    }
}

/// Lines of `text` wrapped to `width`, each in `style`, the first after `head`; only what
/// `window` can show.
fn block(
    head: Option<Span<'static>>,
    text: &str,
    width: usize,
    style: Style,
    window: Window,
) -> Vec<Line<'static>> {
    let head_width = head.as_ref().map_or(0, |h| h.width());
    let (text, cut_before) = windowed(text, width.saturating_sub(head_width), window);
    let mut lines = Vec::new();
    for (i, piece) in wrap(text, width.saturating_sub(head_width)).into_iter().enumerate() {
        let mut spans = Vec::new();
        match (&head, i) {
            (Some(h), 0) if !cut_before => spans.push(h.clone()),
            (Some(_), _) => spans.push(Span::raw(" ".repeat(head_width))),
            (None, _) => {}
        }
        spans.push(Span::styled(piece, style));
        lines.push(Line::from(spans));
    }
    lines
}

/// At most `max` lines of `text` wrapped to `width` and indented, and a line counting the rest.
fn capped(text: &str, width: usize, max: usize, style: Style, more: &str) -> Vec<Line<'static>> {
    let (head, _) = windowed(text, width.saturating_sub(4), Window::Head(max + 1));
    let mut pieces = wrap(head, width.saturating_sub(4));
    let whole =
        if head.len() < text.len() { text.lines().count().max(pieces.len()) } else { pieces.len() };
    let hidden = whole.saturating_sub(max);
    pieces.truncate(max);
    let mut lines: Vec<Line<'static>> =
        pieces.into_iter().map(|p| Line::from(Span::styled(format!("    {p}"), style))).collect();
    if hidden > 0 || !more.is_empty() {
        let counted = if hidden > 0 { format!("… {hidden} more lines") } else { String::new() };
        let text = [counted.as_str(), more]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        lines.push(Line::from(Span::styled(format!("    {text}"), dim())));
    }
    lines
}

fn outcome_mark(result: Option<&ToolOutcome>) -> Span<'static> {
    match result {
        None => Span::styled(" … running", dim()),
        Some(r) if r.is_error => Span::styled(" ✗ error", Style::default().fg(Color::Red)),
        Some(r) => {
            let lines = r.text.lines().count();
            let unit = if lines == 1 { "line" } else { "lines" };
            Span::styled(format!(" ✓ {lines} {unit}"), Style::default().fg(Color::Green))
        }
    }
}

/// One row's lines at `width` columns (the selection gutter included), only what `window`
/// can show.
pub fn row_lines(row: &Row, width: usize, selected: bool, window: Window) -> Vec<Line<'static>> {
    let inner = width.saturating_sub(2).max(1);
    let mut lines = match &row.kind {
        RowKind::User { text } => {
            let head = Span::styled(
                "you › ",
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            );
            block(Some(head), text, inner, Style::default().add_modifier(Modifier::BOLD), window)
        }
        RowKind::Assistant { text, streaming } => {
            let mut lines = block(None, text, inner, Style::default(), window);
            if *streaming {
                lines.push(Line::from(Span::styled("…", dim())));
            }
            lines
        }
        RowKind::Thinking { text } => {
            if row.expanded {
                let head = Span::styled("▾ thinking ", dim());
                block(Some(head), text, inner, dim().add_modifier(Modifier::ITALIC), window)
            } else {
                let words = text.split_whitespace().count();
                vec![Line::from(Span::styled(format!("▸ thinking ({words} words)"), dim()))]
            }
        }
        RowKind::Tool { name, summary, input, result } => {
            let arrow = if row.expanded { "▾ " } else { "▸ " };
            let mut head = vec![
                Span::raw(arrow),
                Span::styled(name.clone(), Style::default().add_modifier(Modifier::BOLD)),
                Span::raw(" "),
                Span::raw(summary.clone()),
                outcome_mark(result.as_ref()),
            ];
            let full: usize = head.iter().map(Span::width).sum();
            if full > inner {
                // One line, cut: the summary gives way first.
                let keep = inner.saturating_sub(arrow.len() + name.chars().count() + 12);
                head[3] = Span::raw(cut(summary, keep));
            }
            let mut lines = vec![Line::from(head)];
            if row.expanded {
                if !input.is_empty() {
                    lines.push(Line::from(Span::styled("  input", dim())));
                    lines.extend(capped(input, inner, INPUT_LINES, dim(), ""));
                }
                if let Some(r) = result {
                    let label = if r.is_error { "  error" } else { "  result" };
                    lines.push(Line::from(Span::styled(label, dim())));
                    let more = if r.bytes > r.text.len() {
                        format!(
                            "({} in all; only the first {} kept)",
                            nucleic_protocol::human_bytes(r.bytes as u64),
                            nucleic_protocol::human_bytes(r.text.len() as u64)
                        )
                    } else {
                        String::new()
                    };
                    lines.extend(capped(&r.text, inner, RESULT_LINES, Style::default(), &more));
                }
            }
            lines
        }
        RowKind::Approval { tool, summary, risk, answer } => {
            let risk = risk.map(|r| format!("[{}] ", risk_word(r))).unwrap_or_default();
            let (state, style) = match answer {
                Some(a) => (a.clone(), dim()),
                None => (
                    "waiting for you".to_owned(),
                    Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD),
                ),
            };
            let head = Span::styled("⚑ ", Style::default().fg(Color::Magenta));
            block(
                Some(head),
                &format!("{risk}{tool} {summary} — {state}"),
                inner,
                style,
                Window::Whole,
            )
        }
        RowKind::Notice { text, tone } => block(None, text, inner, tone_style(*tone), window),
    };
    let gutter = if selected {
        Span::styled("▌ ", Style::default().fg(Color::Cyan))
    } else {
        Span::raw("  ")
    };
    for line in &mut lines {
        line.spans.insert(0, gutter.clone());
    }
    lines
}

pub fn risk_word(risk: nucleic_protocol::Risk) -> &'static str {
    match risk {
        nucleic_protocol::Risk::Low => "low",
        nucleic_protocol::Risk::Medium => "medium",
        nucleic_protocol::Risk::High => "high",
        nucleic_protocol::Risk::Critical => "critical",
    }
}

/// `text` cut to `max` columns with an ellipsis.
pub fn cut(text: &str, max: usize) -> String {
    let whole: usize = text.chars().map(|c| c.width().unwrap_or(0)).sum();
    if whole <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// What one screen of the transcript shows.
#[derive(Debug, Default)]
pub struct Screenful {
    pub lines: Vec<Line<'static>>,
    /// First and last row index shown.
    pub shown: (usize, usize),
    /// Rows laid out to fill it (what the benchmark counts).
    pub laid_out: usize,
}

/// The lines that fill `height` rows of `width` columns with `rows` from `anchor`.
pub fn screenful(
    rows: &[Row],
    anchor: Anchor,
    selected: Option<usize>,
    width: usize,
    height: usize,
) -> Screenful {
    if rows.is_empty() || height == 0 {
        return Screenful::default();
    }
    let last = rows.len() - 1;
    let is_selected = |i: usize| selected.map_or(i == last, |s| s == i);
    let up = |from: usize| {
        let mut taken: Vec<Vec<Line<'static>>> = Vec::new();
        let mut count = 0;
        let mut i = from.min(last);
        loop {
            let lines = row_lines(&rows[i], width, is_selected(i), Window::Tail(height));
            count += lines.len();
            taken.push(lines);
            if count >= height || i == 0 {
                break;
            }
            i -= 1;
        }
        let mut laid_out = taken.len();
        let mut lines: Vec<Line<'static>> = taken.into_iter().rev().flatten().collect();
        let first = from.min(last) + 1 - laid_out;
        // The top row may be cut: its last lines show.
        let extra = lines.len().saturating_sub(height);
        lines.drain(..extra);
        // Everything up to `from` fits: the rows after it fill the rest.
        let mut end = from.min(last);
        while lines.len() < height && end < last {
            end += 1;
            lines.extend(row_lines(&rows[end], width, is_selected(end), Window::Head(height)));
            laid_out += 1;
        }
        lines.truncate(height);
        Screenful { lines, shown: (first, end), laid_out }
    };
    match anchor {
        Anchor::Follow => up(last),
        Anchor::Bottom(i) => up(i),
        Anchor::Top(top) => {
            let top = top.min(last);
            let mut lines = Vec::new();
            let mut i = top;
            while i <= last && lines.len() < height {
                lines.extend(row_lines(&rows[i], width, is_selected(i), Window::Head(height)));
                i += 1;
            }
            if lines.len() < height && top > 0 {
                // The end came before the screen was full: show the last screenful instead.
                return up(last);
            }
            lines.truncate(height);
            Screenful { lines, shown: (top, i - 1), laid_out: i - top }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_at_spaces_and_by_display_width() {
        assert_eq!(wrap("hello world again", 11), ["hello world", "again"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("日本語です", 4), ["日本", "語で", "す"]);
        assert_eq!(wrap("a\n\nb", 5), ["a", "", "b"]);
        assert_eq!(wrap("", 0), [""]);
    }

    fn notice(i: usize) -> Row {
        Row {
            seq: i as u64 + 1,
            kind: RowKind::Notice { text: format!("row {i}"), tone: Tone::Info },
            expanded: false,
        }
    }

    #[test]
    fn only_a_screenful_of_rows_is_laid_out() {
        let rows: Vec<Row> = (0..100_000).map(notice).collect();
        let s = screenful(&rows, Anchor::Follow, None, 80, 20);
        assert_eq!(s.lines.len(), 20);
        assert_eq!(s.laid_out, 20);
        assert_eq!(s.shown, (99_980, 99_999));
        let s = screenful(&rows, Anchor::Top(10), Some(12), 80, 20);
        assert_eq!((s.shown, s.laid_out), ((10, 29), 20));
        let s = screenful(&rows, Anchor::Top(99_990), None, 80, 20);
        assert_eq!(s.shown, (99_980, 99_999), "the end shows a full screen");
        let s = screenful(&rows[..3], Anchor::Follow, None, 80, 20);
        assert_eq!((s.lines.len(), s.shown), (3, (0, 2)));
        let s = screenful(&rows[..30], Anchor::Bottom(5), None, 80, 20);
        assert_eq!(
            (s.lines.len(), s.shown),
            (20, (0, 19)),
            "rows after the anchor fill the screen"
        );
    }

    #[test]
    fn a_reply_of_megabytes_in_one_row_lays_out_a_window_and_matches_the_whole_layout() {
        let text: String = (0..100_000)
            .map(|i| {
                format!("paragraph {i}: the agent keeps talking about the failing test and more\n")
            })
            .collect();
        assert!(text.len() > 7_000_000);
        let row = Row {
            seq: 1,
            kind: RowKind::Assistant { text: text.clone(), streaming: false },
            expanded: false,
        };
        // What a screen of 20 lines lays out of the 7 MB: a few KB from either end.
        assert!(windowed(&text, 58, Window::Tail(20)).0.len() < 20_000);
        assert!(windowed(&text, 58, Window::Head(20)).0.len() < 20_000);
        let whole: Vec<String> =
            row_lines(&row, 60, true, Window::Whole).iter().map(|l| l.to_string()).collect();
        let rows = vec![row];
        let end = screenful(&rows, Anchor::Follow, None, 60, 20);
        let top = screenful(&rows, Anchor::Top(0), Some(0), 60, 20);
        let shown: Vec<String> = end.lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(shown, whole[whole.len() - 20..], "the end, as the whole layout has it");
        let shown: Vec<String> = top.lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(shown, whole[..20], "the start, as the whole layout has it");
    }

    #[test]
    fn a_row_taller_than_the_screen_shows_its_end() {
        let text = (0..50).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let rows = vec![Row {
            seq: 1,
            kind: RowKind::Assistant { text, streaming: false },
            expanded: false,
        }];
        let s = screenful(&rows, Anchor::Follow, None, 40, 5);
        assert_eq!(s.lines.len(), 5);
        assert!(s.lines[4].to_string().contains("line 49"));
    }
}
