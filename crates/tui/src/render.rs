//! Drawing the cockpit with ratatui: the tab line, the session list, the inbox, a session's
//! transcript with its approval bar, the prompt line, the status bar and the list of keys.
//! Every string from the host goes through `sanitize` before it reaches a cell.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState, Wrap,
};

use nucleic_protocol::{SessionStatus, SessionSummary};

use crate::app::{App, Link, Prompt, Screen};
use crate::asking::{Answering, MAX_OPTIONS, PlanReview};
use crate::inbox::InboxItem;
use crate::keys::help_sections;
use crate::layout::{cut, risk_word, screenful};
use crate::sanitize::line as clean;
use crate::transcript::{Tone, tool_summary};

/// The cockpit's word for a status (`web/src/components/Badges.tsx`).
pub fn status_word(status: SessionStatus) -> &'static str {
    match status {
        SessionStatus::Idle => "idle",
        SessionStatus::Running => "running",
        SessionStatus::AwaitingApproval => "needs approval",
        SessionStatus::AwaitingInput => "needs input",
        SessionStatus::Finished => "finished",
        SessionStatus::Error => "error",
    }
}

fn status_style(status: SessionStatus) -> Style {
    match status {
        SessionStatus::Idle | SessionStatus::Finished => {
            Style::default().add_modifier(Modifier::DIM)
        }
        SessionStatus::Running => Style::default().fg(Color::Cyan),
        SessionStatus::AwaitingApproval => {
            Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD)
        }
        SessionStatus::AwaitingInput => Style::default().fg(Color::Green),
        SessionStatus::Error => Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
    }
}

/// `$0`, `<$0.01`, `$1.23` (the cockpit's).
pub fn cost(usd: f64) -> String {
    if usd == 0.0 {
        "$0".into()
    } else if usd < 0.01 {
        "<$0.01".into()
    } else {
        format!("${usd:.2}")
    }
}

/// `just now`, `5 min ago`, `3 h ago`, `2 d ago`.
pub fn ago(ms: i64, now: i64) -> String {
    if ms == 0 {
        return String::new();
    }
    let s = ((now - ms) / 1000).max(0);
    if s < 45 {
        "just now".into()
    } else if s < 3600 {
        format!("{} min ago", (s + 30) / 60)
    } else if s < 86_400 {
        format!("{} h ago", (s + 1800) / 3600)
    } else {
        format!("{} d ago", s / 86_400)
    }
}

fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

/// Draws the whole cockpit; records what the transcript showed in `app.view.shown`.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    if area.height < 3 || area.width < 10 {
        frame.render_widget(Paragraph::new("nucleic: too small"), area);
        return;
    }
    let [tabs, body, prompt, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(app.prompt.as_ref().map_or(0, |p| p.rows(area.height))),
        Constraint::Length(1),
    ])
    .areas(area);
    app.prompt_rows = usize::from(prompt.height);
    draw_tabs(frame, app, tabs);
    match app.screen() {
        Screen::Sessions => draw_sessions(frame, app, body),
        Screen::Inbox => draw_inbox(frame, app, body),
        Screen::Session(id) => draw_session(frame, app, &id, body),
        Screen::Diff(_) => crate::diff_view::draw(frame, app, body),
    }
    draw_prompt(frame, app, prompt);
    draw_status(frame, app, status);
    if app.help {
        draw_help(frame, area, matches!(app.screen(), Screen::Diff(_)));
    }
}

fn draw_tabs(frame: &mut Frame, app: &App, area: Rect) {
    let screen = app.screen();
    let tab = |label: String, on: bool| {
        if on {
            Span::styled(
                format!(" {label} "),
                Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            )
        } else {
            Span::raw(format!(" {label} "))
        }
    };
    let waiting = app.inbox().len();
    let mut spans = vec![
        Span::styled("nucleic ", Style::default().add_modifier(Modifier::BOLD)),
        tab(format!("1 Sessions {}", app.sessions.len()), screen == Screen::Sessions),
        tab(format!("2 Inbox {waiting}"), screen == Screen::Inbox),
    ];
    if let Screen::Session(id) | Screen::Diff(id) = &screen {
        let title = app.sessions.get(id).map_or_else(|| id.clone(), |s| clean(&s.title));
        let diff = if matches!(screen, Screen::Diff(_)) { " · Diff" } else { "" };
        spans.push(tab(format!("{}{diff}", cut(&title, 30)), true));
    }
    let link = match &app.link {
        Some(Link::Lost(why)) => Span::styled(
            format!("  offline: {} (showing what was known)", clean(why)),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ),
        _ => Span::styled("  ● online", Style::default().fg(Color::Green)),
    };
    spans.push(link);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_sessions(frame: &mut Frame, app: &App, area: Rect) {
    let list = app.session_list();
    if list.is_empty() {
        let text = "No sessions yet. Start one: nucleic session new --project <id> \"…\"";
        frame.render_widget(Paragraph::new(text).style(dim()).wrap(Wrap { trim: true }), area);
        return;
    }
    // Narrow: the status and the title only.
    let wide = area.width >= 60;
    let rows: Vec<Row> = list.iter().map(|s| session_row(app, s, wide)).collect();
    let (widths, header) = if wide {
        let widths = vec![
            Constraint::Length(15),
            Constraint::Length(12),
            Constraint::Fill(1),
            Constraint::Length(10),
            Constraint::Length(7),
            Constraint::Length(11),
        ];
        (widths, vec!["status", "project", "session", "approvals", "cost", "active"])
    } else {
        let status = (area.width / 3).min(15);
        (vec![Constraint::Length(status), Constraint::Fill(1)], vec!["status", "session"])
    };
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(dim()))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(app.list_selected));
    frame.render_stateful_widget(table, area, &mut state);
}

fn session_row<'a>(app: &App, s: &SessionSummary, wide: bool) -> Row<'a> {
    let status = Line::from(Span::styled(status_word(s.status), status_style(s.status)));
    let title = Line::from(clean(&s.title));
    if !wide {
        return Row::new(vec![status, title]);
    }
    let project = app.project_name(s.project_id.as_deref()).map(|p| clean(&p)).unwrap_or_default();
    let pending = if s.pending_approvals > 0 {
        let text = format!("{} pending", s.pending_approvals);
        Span::styled(text, Style::default().fg(Color::Magenta))
    } else {
        Span::raw("")
    };
    Row::new(vec![
        status,
        Line::from(project),
        title,
        Line::from(pending),
        Line::from(cost(s.cost_usd)),
        Line::from(Span::styled(ago(s.updated_at, app.now_ms), dim())),
    ])
}

fn inbox_lines(app: &App, item: &InboxItem, width: usize) -> Vec<Line<'static>> {
    let r = &item.request;
    let risk = match r.risk {
        Some(risk) => {
            let style = match risk {
                nucleic_protocol::Risk::Critical => Style::default()
                    .fg(Color::Red)
                    .add_modifier(Modifier::BOLD | Modifier::REVERSED),
                nucleic_protocol::Risk::High => {
                    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
                }
                nucleic_protocol::Risk::Medium => Style::default().fg(Color::Magenta),
                nucleic_protocol::Risk::Low => dim(),
            };
            Span::styled(format!("[{}] ", risk_word(risk)), style)
        }
        None => Span::raw(""),
    };
    let tool = clean(&r.tool_name);
    let summary = tool_summary(&r.input, item.cwd.as_deref());
    let kind = match r.tool_name.as_str() {
        "AskUserQuestion" => Span::styled("[question] ", Style::default().fg(Color::Cyan)),
        "ExitPlanMode" => Span::styled("[plan] ", Style::default().fg(Color::Cyan)),
        _ => Span::raw(""),
    };
    let first = Line::from(vec![
        risk,
        kind,
        Span::styled(tool.clone(), Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(" "),
        Span::raw(cut(&summary, width.saturating_sub(tool.len() + 14))),
    ]);
    let project = item.project.as_deref().map(|p| format!("{} · ", clean(p))).unwrap_or_default();
    let asked = ago(item.at.unix_millis(), app.now_ms);
    let second = Line::from(Span::styled(
        cut(&format!("  {project}{} · asked {asked}", clean(&item.title)), width),
        dim(),
    ));
    let mut lines = vec![first, second];
    if let Some(why) = r.description.as_deref().filter(|d| !d.is_empty()) {
        lines.push(Line::from(Span::styled(cut(&format!("  {}", clean(why)), width), dim())));
    }
    lines
}

fn draw_inbox(frame: &mut Frame, app: &App, area: Rect) {
    let items = app.inbox();
    if items.is_empty() {
        frame.render_widget(Paragraph::new("Nothing waits for you.").style(dim()), area);
        return;
    }
    let width = usize::from(area.width);
    let list: Vec<ListItem> =
        items.iter().map(|i| ListItem::new(inbox_lines(app, i, width))).collect();
    let list = List::new(list)
        .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .highlight_symbol("› ");
    let mut state = ListState::default().with_selected(Some(app.inbox_selected));
    frame.render_stateful_widget(list, area, &mut state);
}

fn draw_session(frame: &mut Frame, app: &mut App, session_id: &str, area: Rect) {
    let pending = app.first_pending(session_id);
    let cwd = app.transcripts.get(session_id).and_then(|t| t.cwd()).map(str::to_owned);
    let waiting = app.transcripts.get(session_id).map_or(0, |t| t.pending().len());
    let [head, body, bar] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(if pending.is_some() { 2 } else { 0 }),
    ])
    .areas(area);
    let summary = app.sessions.get(session_id);
    let mut spans = Vec::new();
    if let Some(s) = summary {
        spans.push(Span::styled(status_word(s.status), status_style(s.status)));
        spans.push(Span::raw(format!("  {}  ", cost(s.cost_usd))));
        if let Some(mode) = &s.mode {
            spans.push(Span::styled(format!("mode {}  ", clean(mode)), dim()));
        }
        if let Some(w) = &s.worktree {
            spans.push(Span::styled(clean(&w.branch), dim()));
        }
    } else {
        spans.push(Span::styled(clean(session_id), dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), head);

    let rows = app.transcripts.get(session_id).map(|t| t.rows()).unwrap_or_default();
    let shown = screenful(
        rows,
        app.view.anchor,
        app.view.selected,
        usize::from(body.width),
        usize::from(body.height),
    );
    if rows.is_empty() {
        frame.render_widget(Paragraph::new("Loading the transcript…").style(dim()), body);
    } else {
        frame.render_widget(Paragraph::new(shown.lines), body);
    }
    app.view.shown = shown.shown;

    if let Some(p) = pending {
        let r = &p.request;
        let more = if waiting > 1 { format!("  +{} more", waiting - 1) } else { String::new() };
        let risk = r.risk.map(|k| format!("[{}] ", risk_word(k))).unwrap_or_default();
        let ask = Line::from(vec![
            Span::styled(
                format!("{risk}{} ", clean(&r.tool_name)),
                Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD),
            ),
            Span::raw(tool_summary(&r.input, cwd.as_deref())),
            Span::styled(more, dim()),
        ]);
        let keys = match r.tool_name.as_str() {
            nucleic_protocol::EXIT_PLAN_MODE => {
                "a Read the plan and approve it · d Deny with feedback…"
            }
            nucleic_protocol::ASK_USER_QUESTION => "a Answer the questions · d Deny…",
            _ => "a Allow · A Always (this session) · P (this project) · d Deny…",
        };
        let keys = Line::from(Span::styled(keys, Style::default().fg(Color::Magenta)));
        frame.render_widget(Paragraph::new(vec![ask, keys]), bar);
    }
}

/// A plan in full (what fits, from its scroll position), then its keys.
fn draw_plan(frame: &mut Frame, plan: &PlanReview, area: Rect) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let width = usize::from(area.width);
    let shown = usize::from(area.height).saturating_sub(2);
    let mut lines = vec![Line::from(Span::styled(
        cut(&format!("The agent's plan ({} lines):", plan.lines.len()), width),
        bold,
    ))];
    lines.extend(
        plan.lines.iter().skip(plan.top).take(shown).map(|l| Line::from(cut(&clean(l), width))),
    );
    lines.resize(shown + 1, Line::default());
    lines.push(Line::from(vec![
        Span::styled("Approve and run in: ", bold),
        Span::raw("e edit · f full · r readonly · d Deny with feedback · j k scroll · Esc Back"),
    ]));
    frame.render_widget(Paragraph::new(lines), area);
}

/// The question being answered, its numbered choices (chosen ones marked) and own words.
fn draw_questions(frame: &mut Frame, asking: &Answering, area: Rect) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let width = usize::from(area.width);
    let question = &asking.questions[asking.at];
    let kind = if question.multi_select { "choose any" } else { "choose one" };
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!(
                "Question {}/{} · {}: ",
                asking.at + 1,
                asking.questions.len(),
                clean(&question.header)
            ),
            bold,
        ),
        Span::raw(cut(&clean(&question.question), width.saturating_sub(20))),
        Span::styled(format!(" ({kind})"), dim()),
    ])];
    let chosen = &asking.chosen[asking.at];
    for (i, option) in question.options.iter().take(MAX_OPTIONS).enumerate() {
        let mark = if chosen.contains(&i) { "[x]" } else { "[ ]" };
        let text = format!("  {} {mark} {}", i + 1, clean(option));
        let style = if chosen.contains(&i) { bold } else { Style::default() };
        lines.push(Line::from(Span::styled(cut(&text, width), style)));
    }
    let other = clean(&asking.other[asking.at]);
    lines.push(Line::from(vec![
        Span::raw("  o Other: "),
        Span::raw(other),
        Span::styled(if asking.typing { "▏ Enter done" } else { "" }, dim()),
    ]));
    lines.push(Line::from(Span::styled(
        "1-9 choose · o own words · Enter next · d Deny · Esc back",
        dim(),
    )));
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_prompt(frame: &mut Frame, app: &App, area: Rect) {
    let Some(prompt) = &app.prompt else { return };
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let line = match prompt {
        Prompt::Plan(plan) => return draw_plan(frame, plan, area),
        Prompt::Questions(asking) => return draw_questions(frame, asking, area),
        Prompt::DenyReason { text, .. } => Line::from(vec![
            Span::styled("Why not? (sent to the agent) ", bold),
            Span::raw(clean(text)),
            Span::styled("▏ Enter Deny · Esc Back", dim()),
        ]),
        Prompt::ConfirmCritical { .. } => Line::from(vec![
            Span::styled(
                "Critical: are you sure? ",
                Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
            Span::raw("y Yes, allow · Esc Back"),
        ]),
        Prompt::Composer { text } => Line::from(vec![
            Span::styled("Message the agent… ", bold),
            Span::raw(clean(text)),
            Span::styled("▏ Enter Send · Esc Back", dim()),
        ]),
        Prompt::ConfirmMerge { base, .. } => Line::from(vec![
            Span::styled(format!("Merge into {}? ", clean(base)), bold),
            Span::raw(
                "y Merge · s Squash · b Rebase · u S B: and update the checkout · other key Back",
            ),
        ]),
        Prompt::ConfirmFinish { finish, .. } => Line::from(vec![
            Span::styled(finish.question(), bold),
            Span::raw("y Yes · any other key Back"),
        ]),
        Prompt::ChooseMode { .. } => Line::from(vec![
            Span::styled("Mode? ", bold),
            Span::raw("r readonly · e edit · f full · any other key Back"),
        ]),
        Prompt::ConfirmStop { .. } => Line::from(vec![
            Span::styled(
                "Stop this agent? ",
                Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
            Span::raw("y Stop · any other key Back"),
        ]),
        Prompt::Comment(draft) => {
            let lines = match draft.end_line {
                Some(end) => format!("{}-{end}", draft.line),
                None => draft.line.to_string(),
            };
            Line::from(vec![
                Span::styled(format!("Comment on {}:{lines}… ", clean(&draft.path)), bold),
                Span::raw(clean(&draft.text)),
                Span::styled("▏ Enter Comment · Esc Back", dim()),
            ])
        }
        Prompt::Model(choice) => Line::from(vec![
            Span::styled("Model? ", bold),
            Span::raw(clean(&choice.text)),
            Span::styled(
                if choice.suggestions.is_empty() {
                    "▏ Enter Switch · Esc Back"
                } else {
                    "▏ Tab the backend's models · Enter Switch · Esc Back"
                },
                dim(),
            ),
        ]),
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let line = match &app.flash {
        Some((text, tone)) => {
            let style = match tone {
                Tone::Info => dim(),
                Tone::Ok => Style::default().fg(Color::Green),
                Tone::Warn => Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD),
            };
            Line::from(Span::styled(clean(text), style))
        }
        None => {
            let hints = match app.screen() {
                Screen::Sessions => "? keys · Enter Open · Tab Inbox · q Quit",
                Screen::Inbox => "? keys · a Allow · A/P Always · d Deny… · Enter Open · q Quit",
                Screen::Session(_) => {
                    "? keys · m Message · x Interrupt · D Diff · M K X C Finish · o Mode · Esc Back"
                }
                Screen::Diff(_) => {
                    "? keys · j k Move · [ ] Turn · c Comment · R Send review · M Merge · Esc Back"
                }
            };
            Line::from(Span::styled(hints, dim()))
        }
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_help(frame: &mut Frame, area: Rect, diff: bool) {
    let mut lines = Vec::new();
    for (section, keys) in help_sections(diff) {
        lines.push(Line::from(Span::styled(
            *section,
            Style::default().add_modifier(Modifier::BOLD),
        )));
        for (key, what) in *keys {
            lines.push(Line::from(vec![
                Span::styled(format!("  {key:<14}"), Style::default().fg(Color::Cyan)),
                Span::raw(*what),
            ]));
        }
    }
    let width = area.width.min(76);
    let height = area.height.min(u16::try_from(lines.len() + 2).unwrap_or(u16::MAX));
    let x = area.x + (area.width - width) / 2;
    let y = area.y + (area.height - height) / 2;
    let popup = Rect { x, y, width, height };
    frame.render_widget(Clear, popup);
    let block = Block::default().borders(Borders::ALL).title(" Keys · any key closes this ");
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}
