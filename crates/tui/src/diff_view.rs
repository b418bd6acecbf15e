//! Drawing the diff screen: the rows on screen only, the cursor's row and a marked range
//! reversed, each changed line's marker as a coloured cell, its code in syntax colours, and
//! review comments under their lines.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::app::App;
use crate::diff::{DiffLine, Row};
use crate::highlight::{Hue, Pieces};
use crate::layout::cut;

/// The colour of a hue: the terminal's own palette (no RGB, no yellow), so a light theme
/// keeps every piece readable.
fn hue_style(hue: Hue) -> Style {
    match hue {
        Hue::Plain => Style::default(),
        Hue::Comment => Style::default().fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
        Hue::Text => Style::default().fg(Color::Cyan),
        Hue::Constant => Style::default().fg(Color::Blue),
        Hue::Keyword => Style::default().fg(Color::Magenta),
        Hue::Name => Style::default().add_modifier(Modifier::BOLD),
    }
}

/// How a row of `kind` reads without syntax colour.
fn row_style(kind: DiffLine) -> Style {
    match kind {
        DiffLine::File => Style::default().add_modifier(Modifier::BOLD),
        DiffLine::Hunk => Style::default().fg(Color::Cyan),
        DiffLine::Added => Style::default().fg(Color::Green),
        DiffLine::Removed => Style::default().fg(Color::Red),
        DiffLine::Context => Style::default(),
        DiffLine::Summary => Style::default().add_modifier(Modifier::DIM),
        DiffLine::Comment => Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD),
    }
}

/// The diff screen in `area`.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    app.diff_height = usize::from(area.height);
    let Some(diff) = &app.diff else {
        let loading = Style::default().add_modifier(Modifier::DIM);
        frame.render_widget(Paragraph::new("Loading the diff…").style(loading), area);
        return;
    };
    let width = usize::from(area.width);
    let height = usize::from(area.height);
    let top = diff.top.min(diff.rows.len().saturating_sub(1));
    let colours = app.colours.screen(diff, top, height);
    let marked = diff.mark.map(|m| (m.min(diff.cursor), m.max(diff.cursor)));
    let lines: Vec<Line> = diff
        .rows
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .map(|(i, row)| {
            let mut line = row_line(row, colours.get(&i), width);
            let in_range = marked.is_some_and(|(a, b)| (a..=b).contains(&i));
            if i == diff.cursor || in_range {
                line = line.patch_style(Style::default().add_modifier(Modifier::REVERSED));
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

/// One row cut to `width` cells: a changed line's marker as a coloured cell, then its code in
/// `pieces` (its syntax colours), else the row in its kind's colour.
fn row_line(row: &Row, pieces: Option<&Pieces>, width: usize) -> Line<'static> {
    let shown = cut(&row.text, width);
    let (Some(pieces), Some(marker)) = (pieces, shown.chars().next()) else {
        return Line::from(Span::styled(shown, row_style(row.kind)));
    };
    let marker_style = match row.kind {
        DiffLine::Added => Style::default().fg(Color::Green).add_modifier(Modifier::REVERSED),
        DiffLine::Removed => Style::default().fg(Color::Red).add_modifier(Modifier::REVERSED),
        _ => Style::default(),
    };
    let code = &shown[marker.len_utf8()..];
    let mut spans = vec![Span::styled(marker.to_string(), marker_style)];
    let mut done = 0;
    for (hue, range) in pieces {
        let (start, end) = (range.start.min(code.len()), range.end.min(code.len()));
        if start >= end || !code.is_char_boundary(start) || !code.is_char_boundary(end) {
            continue;
        }
        spans.push(Span::styled(code[start..end].to_owned(), hue_style(*hue)));
        done = end;
    }
    // What the pieces do not cover (the `…` of a cut line) as it is.
    if done < code.len() && code.is_char_boundary(done) {
        spans.push(Span::raw(code[done..].to_owned()));
    }
    Line::from(spans)
}
