//! A 100,000-event session in the terminal cockpit — ten-event turns, and one reply streamed as
//! 100,000 deltas into one row — opening it to the first frame, and a page scroll, against the
//! same run's baseline — the same events parsed and drawn with no layout
//! (one plain line per event, the last screenful as it is). Also what the cockpit keeps of the
//! session (live heap bytes, `stats_alloc`). `cargo bench -p nucleic-tui`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use nucleic_protocol::{Event, EventKind, HostMessage};
use nucleic_tui::app::App;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::widgets::Paragraph;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

const EVENTS: usize = 100_000;
const ROUNDS: usize = 7;
const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

fn heap() -> i64 {
    let s = ALLOCATOR.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// One turn's events: a prompt, thinking, a reply streamed in deltas then whole, a tool call
/// with a 1 KB result, usage, the turn's end.
fn turn(n: usize) -> Vec<Value> {
    let m = format!("m{n}");
    let mut kinds = vec![
        json!({"type": "userText", "isPartial": false, "messageID": format!("u{n}"), "text": format!("step {n}: fix the next failing test")}),
        json!({"type": "thinking", "isPartial": false, "messageID": m, "text": "The failure is in the session cookie; read the auth module first."}),
    ];
    for d in 0..3 {
        kinds.push(json!({"type": "assistantText", "isPartial": true, "messageID": m, "text": format!("part {d} of the reply, ")}));
    }
    kinds.push(json!({"type": "assistantText", "isPartial": false, "messageID": m, "text": "part 0 of the reply, part 1 of the reply, part 2 of the reply."}));
    let id = format!("t{n}");
    kinds.push(json!({"type": "toolCallCompleted", "toolCallID": id, "name": "Bash", "input": {"command": format!("cargo test step_{n}")}}));
    kinds.push(json!({"type": "toolResult", "toolCallID": id, "content": "test output line\n".repeat(60), "isError": false}));
    kinds.push(json!({"type": "usage", "inputTokens": 1200, "outputTokens": 80, "cachedInputTokens": 900, "costUSD": 0.01}));
    kinds.push(json!({"type": "turnCompleted", "usage": {"inputTokens": 1200, "outputTokens": 80, "cachedInputTokens": 900}, "durationMs": 4200}));
    kinds
}

/// One reply streamed as 100,000 deltas (a narration of sentences, a paragraph every tenth):
/// one row of megabytes.
fn delta(n: usize) -> Vec<Value> {
    let end = if n % 10 == 9 { "\n" } else { " " };
    let text = format!("Sentence {n} of the long narration about the module under test.{end}");
    vec![json!({"type": "assistantText", "isPartial": true, "messageID": "m1", "text": text})]
}

/// The session as the wire carries it: one JSON event per line.
fn lines(kinds: fn(usize) -> Vec<Value>) -> Vec<String> {
    let mut out = Vec::with_capacity(EVENTS);
    let mut n = 0;
    while out.len() < EVENTS {
        for kind in kinds(n) {
            if out.len() == EVENTS {
                break;
            }
            let seq = out.len() + 1;
            let event = json!({"seq": seq, "at": "2026-12-07T12:00:00.000Z", "sessionID": "s1", "backend": "claudeCode", "kind": kind});
            out.push(event.to_string());
        }
        n += 1;
    }
    out
}

/// The cockpit: parse, fold, open, first frame.
fn cockpit(lines: &[String], terminal: &mut Terminal<TestBackend>) -> (Duration, App) {
    let started = Instant::now();
    let mut app = App::new(0);
    app.open("s1");
    for line in lines {
        let event: Event = serde_json::from_str(line).unwrap();
        app.on_host(HostMessage::Event { event });
    }
    terminal.draw(|f| nucleic_tui::render::draw(f, &mut app)).unwrap();
    (started.elapsed(), app)
}

/// One plain line of an event, sanitized, no merging, no wrapping.
fn plain(event: &Event) -> String {
    let text = match &event.kind {
        EventKind::UserText(t) | EventKind::AssistantText(t) | EventKind::Thinking(t) => {
            t.text.clone()
        }
        EventKind::ToolCallCompleted(c) => c.name.clone(),
        EventKind::ToolResult(r) => r.content.as_str().unwrap_or("").to_owned(),
        _ => String::new(),
    };
    nucleic_tui::sanitize::line(&format!("{} {text}", event.kind.type_name()))
}

/// The baseline: parse, one plain line each, the last screenful drawn as it is.
fn baseline(lines: &[String], terminal: &mut Terminal<TestBackend>) -> (Duration, Vec<String>) {
    let started = Instant::now();
    let mut shown = Vec::with_capacity(lines.len());
    for line in lines {
        let event: Event = serde_json::from_str(line).unwrap();
        shown.push(plain(&event));
    }
    let last = shown[shown.len() - usize::from(HEIGHT)..].join("\n");
    terminal.draw(|f| f.render_widget(Paragraph::new(last), f.area())).unwrap();
    (started.elapsed(), shown)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn range(v: &[f64]) -> (f64, f64) {
    (v.iter().copied().fold(f64::MAX, f64::min), v.iter().copied().fold(0.0, f64::max))
}

fn main() {
    measure("turns (ten events each)", &lines(turn));
    measure("one reply of 100,000 deltas", &lines(delta));
}

fn measure(name: &str, lines: &[String]) {
    let bytes: usize = lines.iter().map(String::len).sum();
    println!(
        "{name}: {EVENTS} events, {:.1} MB of JSON lines, {WIDTH}x{HEIGHT}",
        bytes as f64 / 1e6
    );
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    let (mut open, mut bare, mut ratio, mut scroll, mut bare_frame) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut kept = 0;
    for round in 0..ROUNDS {
        // Alternate which goes first, so neither always runs on a warmer cache.
        let (c, b) = if round % 2 == 0 {
            let c = cockpit(lines, &mut terminal);
            (c, baseline(lines, &mut terminal))
        } else {
            let b = baseline(lines, &mut terminal);
            (cockpit(lines, &mut terminal), b)
        };
        let ((c_time, mut app), (b_time, shown)) = (c, b);
        open.push(c_time.as_secs_f64() * 1e3);
        bare.push(b_time.as_secs_f64() * 1e3);
        ratio.push(c_time.as_secs_f64() / b_time.as_secs_f64());
        // A page scroll: PgUp and its frame, ten times, the median; against a bare frame.
        let mut frames = Vec::new();
        for _ in 0..10 {
            let started = Instant::now();
            nucleic_tui::keys::handle(&mut app, KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE));
            terminal.draw(|f| nucleic_tui::render::draw(f, &mut app)).unwrap();
            frames.push(started.elapsed().as_secs_f64() * 1e6);
        }
        scroll.push(median(frames));
        let started = Instant::now();
        let last = shown[shown.len() - usize::from(HEIGHT)..].join("\n");
        terminal.draw(|f| f.render_widget(Paragraph::new(last), f.area())).unwrap();
        bare_frame.push(started.elapsed().as_secs_f64() * 1e6);
        if round == 0 {
            drop(shown);
            let before = heap();
            drop(app);
            kept = before - heap();
        }
    }
    let (lo, hi) = range(&ratio);
    println!(
        "open to first frame: cockpit {:.0} ms, no layout {:.0} ms (medians of {ROUNDS})",
        median(open.clone()),
        median(bare.clone())
    );
    println!("ratio cockpit / no layout: {:.2} ({lo:.2}–{hi:.2}) (target ≤ 2)", median(ratio));
    println!(
        "page scroll (PgUp + frame): {:.0} µs; a bare frame of the same screen {:.0} µs (medians)",
        median(scroll),
        median(bare_frame)
    );
    println!(
        "kept by the cockpit for the session: {:.1} MB ({:.2} of the JSON)",
        kept as f64 / 1e6,
        kept as f64 / bytes as f64
    );
}
