//! Events written together, shared by every reader: the writer publishes each transcript write
//! once, with each event's JSON exactly as the transcript holds it, and subscribers hand out
//! slices of it without copying events or encoding them again.

use std::ops::{Deref, Range};
use std::sync::{Arc, OnceLock};

use nucleic_protocol::Event;
use nucleic_store::WrittenLines;

/// Events written together (or read together from disk), cheap to clone: every clone shares
/// the same events and their JSON.
#[derive(Debug, Clone)]
pub struct EventBatch(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    events: Vec<Event>,
    /// Each event's JSON: given by the writer (the transcript's own lines) or made on first use
    /// for events read from disk (a reader that never asks pays nothing).
    json: OnceLock<Result<Lines, String>>,
}

/// JSON lines back to back, as in a transcript: `ends[i]` is where event `i`'s line ends (just
/// after its newline).
#[derive(Debug)]
struct Lines {
    text: String,
    ends: Vec<usize>,
}

impl Lines {
    /// Line `i` without its newline.
    fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        self.text.get(start..end.checked_sub(1)?)
    }
}

impl EventBatch {
    /// Events without their JSON yet (it is made when first asked for).
    pub fn new(events: Vec<Event>) -> EventBatch {
        EventBatch(Arc::new(Shared { events, json: OnceLock::new() }))
    }

    /// Events and the transcript lines the writer just wrote for them (one per event, in order).
    /// Lines that do not match the events are ignored: the JSON is then made on first use.
    pub(crate) fn written(events: Vec<Event>, lines: WrittenLines) -> EventBatch {
        let json = OnceLock::new();
        if lines.ends.len() == events.len()
            && lines.ends.last().copied().unwrap_or(0) == lines.bytes.len()
            && let Ok(text) = String::from_utf8(lines.bytes)
        {
            let _ = json.set(Ok(Lines { text, ends: lines.ends }));
        }
        EventBatch(Arc::new(Shared { events, json }))
    }

    /// The events, in the order written.
    pub fn events(&self) -> &[Event] {
        &self.0.events
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        self.0.events.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.0.events.is_empty()
    }

    /// Makes every event's JSON now, if it is not made yet (once for every holder of this
    /// batch). Fails when an event cannot be encoded.
    pub fn encode(&self) -> Result<(), String> {
        self.lines().map(|_| ())
    }

    /// Event `i`'s JSON (as `serde_json::to_string` writes it), encoding the batch on first use.
    /// `None` when `i` is out of range or the batch cannot be encoded.
    pub fn json(&self, i: usize) -> Option<&str> {
        self.lines().ok()?.get(i)
    }

    /// Bytes of JSON of the events in `range` (newlines between them not counted); 0 when
    /// the range is empty, out of range, or the batch cannot be encoded.
    pub fn json_len(&self, range: Range<usize>) -> usize {
        let Ok(lines) = self.lines() else { return 0 };
        if range.is_empty() {
            return 0;
        }
        let start = match range.start {
            0 => 0,
            i => lines.ends.get(i - 1).copied().unwrap_or(usize::MAX),
        };
        let end = lines.ends.get(range.end - 1).copied().unwrap_or(0);
        end.saturating_sub(start).saturating_sub(range.len())
    }

    fn lines(&self) -> Result<&Lines, String> {
        self.0.json.get_or_init(|| encode(&self.0.events)).as_ref().map_err(Clone::clone)
    }
}

fn encode(events: &[Event]) -> Result<Lines, String> {
    let mut text = Vec::new();
    let mut ends = Vec::with_capacity(events.len());
    for event in events {
        serde_json::to_writer(&mut text, event)
            .map_err(|e| format!("event {} cannot be encoded: {e}", event.seq))?;
        text.push(b'\n');
        ends.push(text.len());
    }
    let text = String::from_utf8(text).map_err(|e| format!("encoded events are not UTF-8: {e}"))?;
    Ok(Lines { text, ends })
}

/// Consecutive events of one batch: `seq`s with no gap, each once.
#[derive(Debug, Clone)]
pub struct EventSlice {
    batch: EventBatch,
    range: Range<usize>,
}

impl EventSlice {
    pub(crate) fn new(batch: EventBatch, range: Range<usize>) -> EventSlice {
        EventSlice { batch, range }
    }

    /// Every event of `batch` (which must be consecutive: for tests and benches; subscriptions
    /// make slices that are).
    pub fn whole(batch: EventBatch) -> EventSlice {
        let range = 0..batch.len();
        EventSlice { batch, range }
    }

    /// The events.
    pub fn events(&self) -> &[Event] {
        self.batch.events().get(self.range.clone()).unwrap_or_default()
    }

    /// The batch they belong to, and where in it they are.
    pub fn parts(&self) -> (&EventBatch, Range<usize>) {
        (&self.batch, self.range.clone())
    }

    /// The `seq` of the last event (0 when empty).
    pub fn last_seq(&self) -> u64 {
        self.events().last().map_or(0, |e| e.seq)
    }
}

/// One event of a shared batch; dereferences to the [`Event`].
#[derive(Debug, Clone)]
pub struct SharedEvent {
    batch: EventBatch,
    index: usize,
}

impl SharedEvent {
    /// `batch`'s event `index`, if it has one.
    pub(crate) fn new(batch: EventBatch, index: usize) -> Option<SharedEvent> {
        (index < batch.len()).then_some(SharedEvent { batch, index })
    }

    /// Its JSON, as the transcript holds it.
    pub fn json(&self) -> Option<&str> {
        self.batch.json(self.index)
    }
}

impl Deref for SharedEvent {
    type Target = Event;

    fn deref(&self) -> &Event {
        // `new` checked the index; the batch never changes.
        &self.batch.events()[self.index]
    }
}
