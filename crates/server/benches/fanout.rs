//! Fan-out cost: what it takes, once a session's writer has written a batch, to turn it into the
//! WebSocket frames of N subscribed clients (`eventBatches` clients, full verbosity), for N = 1,
//! 8, 32. Measured in one process, interleaved, so only same-round ratios are compared (this
//! machine is noisy).
//!
//! - `copy` (the path before shared batches, kept here as the baseline): the bus carries
//!   `Arc<Vec<Arc<Event>>>`; each client's subscription clones every `Arc<Event>`, its stream
//!   encodes every event to JSON (`to_raw_value`) and queues it alone with its session id; the
//!   connection's writer coalesces queued events into `events` frames of up to 512.
//! - `shared` (today's path): the bus carries one `EventBatch` per write with each event's JSON
//!   (the writer's transcript lines; here encoded once per batch, which the real writer gets for
//!   a copy); each client queues one `EventRun` per batch and its writer copies the JSON into
//!   frames (`nucleic_server::each_event_frame`, the code the writer runs).
//!
//! Both produce the same frames (checked). Neither includes the socket, the byte budget's
//! semaphore or task wake-ups (the copy path paid those per event, the shared one per batch).
//!
//! Run: `cargo bench -p nucleic-server --bench fanout` (`FANOUT_EVENTS`, `FANOUT_ROUNDS`).

use std::error::Error;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use nucleic_core::{EventBatch, EventSlice};
use nucleic_protocol::{
    Backend, Event, EventKind, TextBlock, Timestamp, ToolCall, ToolResult, Verbosity,
};
use nucleic_server::{EventRun, each_event_frame};
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;

type BoxError = Box<dyn Error + Send + Sync>;

/// Events per writer batch (what the agent reader hands the writer at most at a time).
const WRITE_BATCH: usize = 128;
/// Most events in one `events` frame, and the old per-connection queue's length.
const MAX_FRAME: usize = 512;
const MAX_QUEUED: usize = 1024;
const CLIENTS: [usize; 3] = [1, 8, 32];

const WORDS: &[&str] = &[
    "the", "file", "test", "build", "check", "function", "error", "module", "should", "write",
    "config", "update", "because", "returns", "value", "path", "crate", "session", "—", "`code`",
];

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
    fn words(&mut self, lo: usize, hi: usize) -> String {
        let n = self.range(lo, hi);
        (0..n).map(|_| WORDS[self.range(0, WORDS.len() - 1)]).collect::<Vec<_>>().join(" ")
    }
}

/// A Claude-like stream: per iteration 2–10 partial text deltas, the whole text, a tool call
/// and its result (200–2,000 B), numbered from 1.
fn corpus(n: usize) -> Vec<Event> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut kinds = Vec::with_capacity(n + 16);
    while kinds.len() < n {
        let message = format!("msg_{:016x}", rng.next());
        let mut text = String::new();
        for _ in 0..rng.range(2, 10) {
            let chunk = rng.words(3, 12);
            text.push_str(&chunk);
            let delta = TextBlock { is_partial: true, message_id: message.clone(), text: chunk };
            kinds.push(("stream_event", EventKind::AssistantText(delta)));
        }
        let whole = TextBlock { is_partial: false, message_id: message, text };
        kinds.push(("assistant", EventKind::AssistantText(whole)));
        let id = format!("toolu_{:016x}", rng.next());
        let call = ToolCall {
            tool_call_id: id.clone(),
            name: "Bash".into(),
            input: json!({"command": rng.words(2, 8), "description": rng.words(3, 10)}),
            parent_tool_call_id: None,
        };
        kinds.push(("assistant", EventKind::ToolCallStarted(call)));
        let content = json!(rng.words(30, 300));
        let result = ToolResult { tool_call_id: id, content, is_error: false };
        kinds.push(("user", EventKind::ToolResult(result)));
    }
    kinds
        .into_iter()
        .zip(1u64..)
        .map(|((native, kind), seq)| Event {
            seq,
            at: Timestamp::from_unix_millis(1_764_600_000_000 + seq as i64),
            session_id: "0b8a3c52-6f0e-4d7c-9a51-2f6e8d1c4b7a".into(),
            backend: Backend::ClaudeCode,
            native_type: Some(native.into()),
            origin: None,
            kind,
        })
        .collect()
}

/// The old frame shapes over events already encoded (as the old `batch.rs` wrote them).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Wire<'a> {
    Event {
        event: &'a RawValue,
    },
    Events {
        #[serde(rename = "sessionID")]
        session_id: &'a str,
        events: Vec<&'a RawValue>,
    },
}

/// The copy path for one client: hands each frame to `send` (as a writer does, one at a time).
fn copy_client(bus: &[Arc<Vec<Arc<Event>>>], mut send: impl FnMut(String)) -> Result<(), BoxError> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(String, Box<RawValue>)>(MAX_QUEUED);
    let mut write_one = |rx: &mut tokio::sync::mpsc::Receiver<(String, Box<RawValue>)>,
                         held: &mut Option<(String, Box<RawValue>)>|
     -> Result<bool, BoxError> {
        let Some((session_id, first)) = held.take().or_else(|| rx.try_recv().ok()) else {
            return Ok(false);
        };
        let mut events = vec![first];
        while events.len() < MAX_FRAME {
            let Ok((s, event)) = rx.try_recv() else { break };
            if s != session_id {
                *held = Some((s, event));
                break;
            }
            events.push(event);
        }
        let text = if let [event] = events.as_slice() {
            serde_json::to_string(&Wire::Event { event })?
        } else {
            let events = events.iter().map(AsRef::as_ref).collect();
            serde_json::to_string(&Wire::Events { session_id: &session_id, events })?
        };
        send(text);
        Ok(true)
    };
    let mut held = None;
    for batch in bus {
        // The subscription's backlog: one `Arc` clone per event.
        let backlog: Vec<Arc<Event>> = batch.iter().cloned().collect();
        for event in backlog {
            let raw = serde_json::value::to_raw_value(&*event)?;
            let mut item = (event.session_id.clone(), raw);
            // The queue is full: the writer sends a frame first (as the real one would).
            while let Err(e) = tx.try_send(item) {
                item = e.into_inner();
                write_one(&mut rx, &mut held)?;
            }
        }
    }
    drop(tx);
    while write_one(&mut rx, &mut held)? {}
    Ok(())
}

/// The shared path for one client: hands each frame to `send`.
fn shared_client(bus: &[EventBatch], send: impl FnMut(String)) -> Result<(), BoxError> {
    let mut runs = Vec::with_capacity(bus.len());
    for batch in bus {
        let slice = EventSlice::whole(batch.clone());
        if let Some(run) = EventRun::of(&slice, Verbosity::Full)? {
            runs.push(run);
        }
    }
    each_event_frame(runs, true, send);
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn summary(v: &[f64]) -> String {
    let mut s = v.to_vec();
    let m = median(&mut s);
    format!("{m:.2} ({:.2}–{:.2})", s[0], s[s.len() - 1])
}

fn main() -> Result<(), BoxError> {
    let n: usize =
        std::env::var("FANOUT_EVENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(50_000);
    let rounds: usize =
        std::env::var("FANOUT_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let events = corpus(n);
    let json: usize = events.iter().map(|e| serde_json::to_string(e).map_or(0, |s| s.len())).sum();
    println!(
        "corpus: {} events in batches of {WRITE_BATCH}, {:.1} MB of JSON, mean {:.0} B/event",
        events.len(),
        json as f64 / 1e6,
        json as f64 / events.len() as f64
    );

    // Same frames both ways.
    let copy_bus: Vec<Arc<Vec<Arc<Event>>>> = events
        .chunks(WRITE_BATCH)
        .map(|c| Arc::new(c.iter().cloned().map(Arc::new).collect()))
        .collect();
    let shared_bus: Vec<EventBatch> =
        events.chunks(WRITE_BATCH).map(|c| EventBatch::new(c.to_vec())).collect();
    let (mut copied, mut shared) = (Vec::new(), Vec::new());
    copy_client(&copy_bus, |f| copied.push(f))?;
    shared_client(&shared_bus, |f| shared.push(f))?;
    if copied != shared {
        return Err("the shared path's frames differ from the copy path's".into());
    }

    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); CLIENTS.len()];
    let mut rates: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); CLIENTS.len()];
    for round in 0..rounds {
        let mut line = format!("round {round}:");
        for (k, &clients) in CLIENTS.iter().enumerate() {
            let mut secs = [0.0f64; 2];
            for step in 0..2 {
                let which = (step + round) % 2;
                // The writer's events, owned as the writer owns them (not timed).
                let written: Vec<Vec<Event>> =
                    events.chunks(WRITE_BATCH).map(<[Event]>::to_vec).collect();
                let mut sent = 0usize;
                let t = Instant::now();
                if which == 0 {
                    // The writer's publication, then every client.
                    let bus: Vec<Arc<Vec<Arc<Event>>>> = written
                        .into_iter()
                        .map(|c| Arc::new(c.into_iter().map(Arc::new).collect()))
                        .collect();
                    for _ in 0..clients {
                        copy_client(&bus, |f| sent += black_box(f).len())?;
                    }
                } else {
                    let bus: Vec<EventBatch> = written
                        .into_iter()
                        .map(|c| {
                            let batch = EventBatch::new(c);
                            let _ = batch.encode();
                            batch
                        })
                        .collect();
                    for _ in 0..clients {
                        shared_client(&bus, |f| sent += black_box(f).len())?;
                    }
                }
                secs[which] = t.elapsed().as_secs_f64();
                black_box(sent);
            }
            let rate = |s: f64| (events.len() * clients) as f64 / s;
            line.push_str(&format!(
                "  N={clients}: copy {:.0} k client-events/s, shared {:.0} k",
                rate(secs[0]) / 1e3,
                rate(secs[1]) / 1e3
            ));
            ratios[k].push(secs[0] / secs[1]);
            rates[k].0.push(rate(secs[0]) / 1e3);
            rates[k].1.push(rate(secs[1]) / 1e3);
        }
        println!("{line}");
    }
    println!("median (min–max) over {rounds} rounds; thousands of client-events per second");
    for (k, &clients) in CLIENTS.iter().enumerate() {
        println!(
            "N={clients:>2}: copy {}  shared {}  copy time ÷ shared time {}",
            summary(&rates[k].0),
            summary(&rates[k].1),
            summary(&ratios[k])
        );
    }
    Ok(())
}
