//! Stream-path throughput against a bare `serde_json::Value` parse of the same lines, measured
//! in one process so that only same-round ratios are compared (the machine is noisy).
//!
//! Variants, interleaved with the order rotated each round:
//! - `baseline`: `serde_json::from_str::<Value>` per line.
//! - `typed`:    `ClaudeDecoder::decode` per line (one fresh decoder per pass).
//! - `whole`:    decode → `AgentOutput` over an mpsc → `SessionController` (seq, status,
//!   transcript append, broadcast) → a `Subscription` from seq 1, until `runFinished`.
//!
//! Run: `cargo bench -p nucleic-core --bench pipeline` (see `docs/benchmarks.md`).
//! Environment knobs (optional): `PIPELINE_LINES` (default 200000), `PIPELINE_ROUNDS` (default 5),
//! `PIPELINE_DIAG=0` (skip the diagnostics), `PIPELINE_PROFILE_WHOLE=N` (only run the whole path
//! N times, for a profiler).

use std::collections::BTreeMap;
use std::error::Error;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_agents::claude::ClaudeDecoder;
use nucleic_agents::{AgentControl, AgentError, AgentOutput, Capabilities};
use nucleic_core::{SessionConfig, SessionController, Subscription};
use nucleic_protocol::{
    Backend, Decision, Event, EventKind, RawJson, RunFinished, RunOutcome, Timestamp,
};
use serde_json::Value;
use tokio::sync::mpsc;

type BoxError = Box<dyn Error + Send + Sync>;

const SAMPLES: &str = include_str!("../../agents/tests/fixtures/claude-2.1.332.samples.jsonl");
const SEED: u64 = 42;
const DEFAULT_LINES: usize = 200_000;
const DEFAULT_ROUNDS: usize = 5;
const CHANNEL_CAPACITY: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Deterministic randomness: xorshift64*.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    fn hex(&mut self, n: usize) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(n);
        let mut bits = 0u64;
        for i in 0..n {
            if i % 16 == 0 {
                bits = self.next_u64();
            }
            s.push(HEX[(bits & 0xf) as usize] as char);
            bits >>= 4;
        }
        s
    }

    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-4{}-a{}-{}",
            &h[0..8],
            &h[8..12],
            &h[13..16],
            &h[17..20],
            &h[20..32]
        )
    }
}

const WORDS: &[&str] = &[
    "the",
    "file",
    "test",
    "build",
    "I'll",
    "check",
    "function",
    "error",
    "module",
    "should",
    "write",
    "read",
    "config",
    "update",
    "because",
    "returns",
    "value",
    "string",
    "path",
    "then",
    "crate",
    "session",
    "a",
    "is",
    "of",
    "to",
    "in",
    "and",
    "not",
    "we",
    "this",
    "output",
    "line",
    "handler",
    "now",
    "fix",
    "run",
    "cargo",
    "passes",
    "with",
    "—",
    "\"quoted\"",
    "`code`",
    "ok.",
];

fn words(rng: &mut Rng, lo: usize, hi: usize) -> String {
    let mut s = String::new();
    for _ in 0..rng.range(lo, hi) {
        s.push_str(WORDS[rng.range(0, WORDS.len() - 1)]);
        s.push(' ');
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Corpus: the fixture's verbatim lines as templates; only ids, uuids and text are replaced.
//
// The lines are not re-serialized from a `Value`: without serde_json's `preserve_order` that
// would sort keys (moving `type` away from the front) and drop the CLI's spacing, changing the
// lines the decoder sees. Instead each varying string value is located in the verbatim line and
// replaced with a new value encoded by `serde_json::to_string`, so everything else stays
// byte-exact and every line stays valid JSON (checked after building).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Uuid,
    Session,
    MsgId,
    ReqId,
    ToolId,
    Text,
}

#[derive(Debug)]
enum Seg {
    Lit(String),
    Slot(Slot),
}

#[derive(Debug)]
struct Template(Vec<Seg>);

#[derive(Default)]
struct Fill {
    uuid: String,
    session: String,
    msg_id: String,
    req_id: String,
    tool_id: String,
    text: String,
}

impl Template {
    /// `slots` pairs an original string value (as it appears, unencoded) with what replaces it.
    fn new(line: &str, slots: &[(&str, Slot)]) -> Result<Template, BoxError> {
        let pats: Vec<(String, Slot)> = slots
            .iter()
            .map(|(v, s)| Ok((serde_json::to_string(v)?, *s)))
            .collect::<Result<_, serde_json::Error>>()?;
        for (p, _) in &pats {
            if !line.contains(p.as_str()) {
                return Err(format!("template value {p} not found in {line}").into());
            }
        }
        let mut segs = Vec::new();
        let mut rest = line;
        loop {
            let next = pats
                .iter()
                .filter_map(|(p, s)| rest.find(p.as_str()).map(|i| (i, p.len(), *s)))
                .min_by_key(|(i, _, _)| *i);
            match next {
                Some((i, len, slot)) => {
                    segs.push(Seg::Lit(rest[..i].to_owned()));
                    segs.push(Seg::Slot(slot));
                    rest = &rest[i + len..];
                }
                None => {
                    segs.push(Seg::Lit(rest.to_owned()));
                    break;
                }
            }
        }
        Ok(Template(segs))
    }

    fn render(&self, f: &Fill) -> Result<String, BoxError> {
        let mut out = String::with_capacity(1024);
        for seg in &self.0 {
            match seg {
                Seg::Lit(s) => out.push_str(s),
                Seg::Slot(slot) => {
                    let v = match slot {
                        Slot::Uuid => &f.uuid,
                        Slot::Session => &f.session,
                        Slot::MsgId => &f.msg_id,
                        Slot::ReqId => &f.req_id,
                        Slot::ToolId => &f.tool_id,
                        Slot::Text => &f.text,
                    };
                    out.push_str(&serde_json::to_string(v)?);
                }
            }
        }
        Ok(out)
    }
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Result<&'a str, BoxError> {
    let mut cur = v;
    for key in path {
        cur = match key.parse::<usize>() {
            Ok(i) => cur.get(i),
            Err(_) => cur.get(*key),
        }
        .ok_or_else(|| format!("no {path:?} in sample"))?;
    }
    cur.as_str()
        .ok_or_else(|| format!("{path:?} is not a string").into())
}

struct Templates {
    init: Template,
    msg_start: Template,
    block_start: Template,
    delta: Template,
    block_stop: Template,
    msg_delta: Template,
    msg_stop: Template,
    asst_text: Template,
    asst_tool: Template,
    tool_result: Template,
    result: Template,
}

fn templates() -> Result<Templates, BoxError> {
    let mut samples = BTreeMap::new();
    for line in SAMPLES.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)?;
        let name = str_at(&v, &["sample"])?.to_owned();
        let text = str_at(&v, &["line"])?.to_owned();
        let parsed: Value = serde_json::from_str(&text)?;
        samples.insert(name, (text, parsed));
    }
    let get = |name: &str| {
        samples
            .get(name)
            .ok_or_else(|| BoxError::from(format!("sample {name} missing from the fixture")))
    };
    use Slot::*;
    // A stream_event line: uuid, session and message id vary.
    let stream = |name: &str, extra: &[&[&str]]| -> Result<Template, BoxError> {
        let (line, v) = get(name)?;
        let mut slots = vec![
            (str_at(v, &["uuid"])?, Uuid),
            (str_at(v, &["session_id"])?, Session),
            (str_at(v, &["api_message_id"])?, MsgId),
        ];
        for path in extra {
            slots.push((str_at(v, path)?, Text));
        }
        Template::new(line, &slots)
    };
    let message = |name: &str, text: Option<&[&str]>, tool: Option<&[&str]>| {
        let (line, v) = get(name)?;
        let mut slots = vec![
            (str_at(v, &["uuid"])?, Uuid),
            (str_at(v, &["session_id"])?, Session),
        ];
        if let Ok(id) = str_at(v, &["message", "id"]) {
            slots.push((id, MsgId));
        }
        if let Ok(id) = str_at(v, &["request_id"]) {
            slots.push((id, ReqId));
        }
        if let Some(p) = text {
            slots.push((str_at(v, p)?, Text));
        }
        if let Some(p) = tool {
            slots.push((str_at(v, p)?, ToolId));
        }
        Template::new(line, &slots)
    };
    Ok(Templates {
        init: message("system/init", None, None)?,
        msg_start: stream("stream_event/message_start", &[])?,
        block_start: stream("stream_event/content_block_start/text", &[])?,
        delta: stream(
            "stream_event/content_block_delta/text_delta",
            &[&["event", "delta", "text"]],
        )?,
        block_stop: stream("stream_event/content_block_stop", &[])?,
        msg_delta: stream("stream_event/message_delta", &[])?,
        msg_stop: stream("stream_event/message_stop", &[])?,
        asst_text: message(
            "assistant/text",
            Some(&["message", "content", "0", "text"]),
            None,
        )?,
        asst_tool: message(
            "assistant/tool_use",
            None,
            Some(&["message", "content", "0", "id"]),
        )?,
        tool_result: message(
            "user/tool_result",
            None,
            Some(&["message", "content", "0", "tool_use_id"]),
        )?,
        result: message("result/success", None, None)?,
    })
}

#[derive(Debug)]
struct Corpus {
    lines: Vec<String>,
    bytes: u64,
    mix: BTreeMap<&'static str, usize>,
    sessions: usize,
}

fn build_corpus(target: usize) -> Result<Corpus, BoxError> {
    let t = templates()?;
    let mut rng = Rng::new(SEED);
    let mut lines = Vec::with_capacity(target + 200);
    let mut mix: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut sessions = 0;
    let mut f = Fill::default();
    let mut emit = |tpl: &Template,
                    kind: &'static str,
                    f: &mut Fill,
                    rng: &mut Rng,
                    lines: &mut Vec<String>|
     -> Result<(), BoxError> {
        f.uuid = rng.uuid();
        lines.push(tpl.render(f)?);
        *mix.entry(kind).or_default() += 1;
        Ok(())
    };
    // Whole sessions only, so the corpus ends with a `result` and is a little over `target`.
    while lines.len() < target {
        sessions += 1;
        f.session = rng.uuid();
        emit(&t.init, "system/init", &mut f, &mut rng, &mut lines)?;
        for _ in 0..rng.range(5, 15) {
            let tool = rng.chance(70);
            f.msg_id = format!("msg_mock_{}", rng.hex(20));
            f.req_id = format!("req_mock_{}", rng.hex(16));
            f.tool_id = format!("toolu_{}", rng.hex(24));
            emit(&t.msg_start, "stream_event", &mut f, &mut rng, &mut lines)?;
            emit(&t.block_start, "stream_event", &mut f, &mut rng, &mut lines)?;
            let mut full = String::new();
            for _ in 0..rng.range(2, 10) {
                f.text = words(&mut rng, 1, 6);
                full.push_str(&f.text);
                emit(&t.delta, "stream_event", &mut f, &mut rng, &mut lines)?;
            }
            emit(&t.block_stop, "stream_event", &mut f, &mut rng, &mut lines)?;
            emit(&t.msg_delta, "stream_event", &mut f, &mut rng, &mut lines)?;
            emit(&t.msg_stop, "stream_event", &mut f, &mut rng, &mut lines)?;
            if tool {
                emit(&t.asst_tool, "assistant", &mut f, &mut rng, &mut lines)?;
                emit(&t.tool_result, "user", &mut f, &mut rng, &mut lines)?;
            } else {
                f.text = full;
                emit(&t.asst_text, "assistant", &mut f, &mut rng, &mut lines)?;
            }
        }
        emit(&t.result, "result", &mut f, &mut rng, &mut lines)?;
    }
    let bytes = lines.iter().map(|l| l.len() as u64 + 1).sum();
    Ok(Corpus {
        lines,
        bytes,
        mix,
        sessions,
    })
}

// ---------------------------------------------------------------------------------------------
// Variants.

fn run_baseline(lines: &[String]) -> Result<Duration, BoxError> {
    let start = Instant::now();
    for line in lines {
        let v: Value = serde_json::from_str(black_box(line))?;
        black_box(v);
    }
    Ok(start.elapsed())
}

fn run_typed(lines: &[String]) -> Duration {
    let start = Instant::now();
    let mut decoder = ClaudeDecoder::new();
    for line in lines {
        black_box(decoder.decode(black_box(line)));
    }
    black_box(&decoder);
    start.elapsed()
}

/// An agent that is already running and needs nothing from the controller.
#[derive(Debug)]
struct NullAgent;

impl AgentControl for NullAgent {
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            interactive_approvals: false,
            edited_tool_input: false,
            allow_always: false,
            deny_and_stop: false,
            interrupt: false,
            set_model: false,
            set_permission_mode: false,
            resume: false,
            fork: false,
            partial_deltas: false,
        }
    }
    fn send_user_text(&self, _text: &str) -> impl Future<Output = Result<(), AgentError>> + Send {
        std::future::ready(Ok(()))
    }
    fn respond(
        &self,
        _request_id: &str,
        _decision: &Decision,
    ) -> impl Future<Output = Result<(), AgentError>> + Send {
        std::future::ready(Ok(()))
    }
    fn interrupt(&self) -> impl Future<Output = Result<(), AgentError>> + Send {
        std::future::ready(Ok(()))
    }
    fn set_model(&self, _model: &str) -> impl Future<Output = Result<(), AgentError>> + Send {
        std::future::ready(Ok(()))
    }
    fn set_permission_mode(
        &self,
        _mode: &str,
    ) -> impl Future<Output = Result<(), AgentError>> + Send {
        std::future::ready(Ok(()))
    }
    fn close_input(&self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
    }
    fn stop(&self, _grace: Duration) {}
    fn pid(&self) -> Option<u32> {
        None
    }
}

#[derive(Debug)]
struct WholeRun {
    elapsed: Duration,
    events: u64,
    transcript_bytes: u64,
    /// Pauses of more than `STALL` between two events reaching the subscriber, and their sum.
    stalls: usize,
    stall_time: Duration,
    max_gap: Duration,
}

/// A pause between two delivered events long enough to be more than scheduling noise.
const STALL: Duration = Duration::from_millis(20);

/// How the whole path is wired; the measured run uses `Shape::MEASURED`, the others are
/// diagnostics.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// The subscriber runs as a spawned task (as a host's client connection would), rather than
    /// on the thread that called `block_on`.
    consumer_task: bool,
    /// The producer decodes this many lines before sending them (one `AgentOutput` per line
    /// either way); 1 = send each line as soon as it is decoded, like the Claude adapter does.
    burst: usize,
}

impl Shape {
    const MEASURED: Shape = Shape {
        consumer_task: true,
        burst: 1,
    };
}

/// Decodes every line and sends it on, then the exit; what an adapter's reader task does.
fn spawn_producer(
    lines: Arc<Vec<String>>,
    tx: mpsc::Sender<AgentOutput>,
    burst: usize,
) -> tokio::task::JoinHandle<Result<(), &'static str>> {
    tokio::spawn(async move {
        let mut decoder = ClaudeDecoder::new();
        let mut pending = Vec::with_capacity(burst);
        for chunk in lines.chunks(burst.max(1)) {
            pending.extend(chunk.iter().map(|line| {
                let d = decoder.decode(line);
                AgentOutput::Events {
                    native_type: Some(d.native_type),
                    kinds: d.events,
                }
            }));
            for out in pending.drain(..) {
                if tx.send(out).await.is_err() {
                    return Err("the receiver stopped reading");
                }
            }
        }
        let exit = AgentOutput::Exited(RunFinished {
            outcome: RunOutcome::Completed,
            message: None,
            exit_code: Some(0),
        });
        tx.send(exit)
            .await
            .map_err(|_| "the receiver stopped reading")
    })
}

fn session_config(dir: &Path, tag: &str) -> SessionConfig {
    SessionConfig {
        session_id: format!("bench-{tag}"),
        backend: Backend::ClaudeCode,
        transcript: dir.join(format!("{tag}.jsonl")),
        approval_timeout: None,
    }
}

#[derive(Debug, Default)]
struct Consumed {
    elapsed: Option<Duration>,
    events: u64,
    stalls: usize,
    stall_time: Duration,
    max_gap: Duration,
}

/// Reads the subscription to its end, checking that seq is gapless; timed until `runFinished`,
/// then read on (untimed) to the end of the stream — the status change that follows it — so the
/// gapless check covers every event the controller wrote.
async fn consume(mut sub: Subscription, start: Instant) -> Result<Consumed, BoxError> {
    let mut c = Consumed::default();
    let mut expected = 1u64;
    let mut last = start;
    while let Some(event) = sub.next().await? {
        if c.elapsed.is_none() {
            let now = Instant::now();
            let gap = now - last;
            last = now;
            c.max_gap = c.max_gap.max(gap);
            if gap > STALL {
                c.stalls += 1;
                c.stall_time += gap;
            }
        }
        if event.seq != expected {
            return Err(format!("seq gap: expected {expected}, got {}", event.seq).into());
        }
        expected += 1;
        if c.elapsed.is_none() && matches!(event.kind, EventKind::RunFinished(_)) {
            c.elapsed = Some(start.elapsed());
        }
    }
    c.events = expected - 1;
    Ok(c)
}

/// The whole path: decode → controller → subscriber from seq 1.
async fn run_whole(
    lines: Arc<Vec<String>>,
    dir: &Path,
    tag: &str,
    shape: Shape,
) -> Result<WholeRun, BoxError> {
    let config = session_config(dir, tag);
    let transcript = config.transcript.clone();
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let handle = SessionController::start(config, NullAgent, rx)?;
    let sub = handle.subscribe(1)?;

    let start = Instant::now();
    let consumed = if shape.consumer_task {
        let consumer = tokio::spawn(consume(sub, start));
        let producer = spawn_producer(lines, tx, shape.burst);
        let consumed = consumer.await??;
        producer.await??;
        consumed
    } else {
        let producer = spawn_producer(lines, tx, shape.burst);
        let consumed = consume(sub, start).await?;
        producer.await??;
        consumed
    };
    let elapsed = consumed
        .elapsed
        .ok_or("the subscription ended before runFinished")?;
    let state = handle.state();
    if state.last_seq != consumed.events {
        return Err(format!(
            "controller wrote {} events, subscriber saw {}",
            state.last_seq, consumed.events
        )
        .into());
    }
    let transcript_bytes = std::fs::metadata(&transcript)?.len();
    std::fs::remove_file(&transcript)?;
    Ok(WholeRun {
        elapsed,
        events: consumed.events,
        transcript_bytes,
        stalls: consumed.stalls,
        stall_time: consumed.stall_time,
        max_gap: consumed.max_gap,
    })
}

// ---------------------------------------------------------------------------------------------
// Diagnostics: where the whole path's time goes (not part of the verdict).

/// decode → mpsc → a task that only counts: the cost of the hand-off between tasks. With `keep`,
/// the receiving task keeps the outputs instead of dropping them (they are freed after the
/// clock stops), which takes cross-thread frees out of the measurement.
async fn split_channel(
    lines: Arc<Vec<String>>,
    burst: usize,
    keep: bool,
) -> Result<Duration, BoxError> {
    let (tx, mut rx) = mpsc::channel(CHANNEL_CAPACITY);
    let start = Instant::now();
    let consumer = tokio::spawn(async move {
        let mut kept = Vec::with_capacity(if keep { lines_hint() } else { 0 });
        let mut kinds = 0usize;
        while let Some(out) = rx.recv().await {
            match out {
                AgentOutput::Events { kinds: k, .. } if keep => {
                    kinds += k.len();
                    kept.push(k);
                }
                AgentOutput::Events { kinds: k, .. } => kinds += black_box(k).len(),
                AgentOutput::Exited(_) => break,
            }
        }
        (kinds, kept, Instant::now())
    });
    let producer = spawn_producer(lines, tx, burst);
    let (kinds, kept, end) = consumer.await?;
    let elapsed = end - start;
    producer.await??;
    black_box(kinds);
    drop(kept);
    Ok(elapsed)
}

/// Like `split_channel`, but one message carries `batch` decoded lines: what a batched
/// adapter→controller channel would cost.
async fn split_channel_batched(
    lines: Arc<Vec<String>>,
    batch: usize,
) -> Result<Duration, BoxError> {
    let (tx, mut rx) = mpsc::channel::<Vec<AgentOutput>>(CHANNEL_CAPACITY);
    let start = Instant::now();
    let consumer = tokio::spawn(async move {
        let mut kinds = 0usize;
        while let Some(outs) = rx.recv().await {
            for out in outs {
                if let AgentOutput::Events { kinds: k, .. } = out {
                    kinds += black_box(k).len();
                }
            }
        }
        kinds
    });
    let producer = tokio::spawn(async move {
        let mut decoder = ClaudeDecoder::new();
        for chunk in lines.chunks(batch.max(1)) {
            let outs: Vec<AgentOutput> = chunk
                .iter()
                .map(|line| {
                    let d = decoder.decode(line);
                    AgentOutput::Events {
                        native_type: Some(d.native_type),
                        kinds: d.events,
                    }
                })
                .collect();
            if tx.send(outs).await.is_err() {
                return Err("the receiver stopped reading");
            }
        }
        Ok(())
    });
    black_box(consumer.await?);
    let elapsed = start.elapsed();
    producer.await??;
    Ok(elapsed)
}

fn lines_hint() -> usize {
    env_usize("PIPELINE_LINES", DEFAULT_LINES) + 1024
}

/// decode → controller (seq, status, transcript, broadcast to nobody), no subscriber.
async fn split_controller(
    lines: Arc<Vec<String>>,
    dir: &Path,
    tag: &str,
) -> Result<Duration, BoxError> {
    let config = session_config(dir, tag);
    let transcript = config.transcript.clone();
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let handle = SessionController::start(config, NullAgent, rx)?;
    let start = Instant::now();
    let producer = spawn_producer(lines, tx, 1);
    handle.wait_finished().await;
    let elapsed = start.elapsed();
    producer.await??;
    std::fs::remove_file(&transcript)?;
    Ok(elapsed)
}

/// Single-threaded CPU costs per stage, in the order the controller pays them.
#[derive(Debug, Default)]
struct CpuSplit {
    decode: Duration,
    /// Re-validating lines kept whole as `raw` events (`RawJson::from_any_text`), a part of
    /// `decode` measured again on its own.
    raw_copy: Duration,
    raw_lines: usize,
    build: Duration,
    encode: Duration,
    clone2: Duration,
    encoded_bytes: usize,
}

fn split_cpu(lines: &[String]) -> Result<CpuSplit, BoxError> {
    let mut s = CpuSplit::default();
    let mut decoder = ClaudeDecoder::new();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut seq = 0u64;
    let session_id = "bench-cpu".to_owned();
    for chunk in lines.chunks(256) {
        let t = Instant::now();
        let decoded: Vec<_> = chunk.iter().map(|l| decoder.decode(l)).collect();
        s.decode += t.elapsed();

        let raw: Vec<&String> = chunk
            .iter()
            .zip(&decoded)
            .filter(|(_, d)| d.events.iter().any(|k| matches!(k, EventKind::Raw(_))))
            .map(|(l, _)| l)
            .collect();
        let t = Instant::now();
        for line in &raw {
            black_box(RawJson::from_any_text(line));
        }
        s.raw_copy += t.elapsed();
        s.raw_lines += raw.len();

        let t = Instant::now();
        let mut events = Vec::with_capacity(decoded.len() * 2);
        for d in decoded {
            let native = Some(d.native_type);
            for kind in d.events {
                seq += 1;
                events.push(Event {
                    seq,
                    at: Timestamp::from_datetime(time::OffsetDateTime::now_utc()),
                    session_id: session_id.clone(),
                    backend: Backend::ClaudeCode,
                    native_type: native.clone(),
                    kind,
                });
            }
        }
        s.build += t.elapsed();

        let t = Instant::now();
        buf.clear();
        for e in &events {
            serde_json::to_writer(&mut buf, e)?;
            buf.push(b'\n');
        }
        s.encoded_bytes += buf.len();
        s.encode += t.elapsed();

        // The controller clones each event into the broadcast `Arc`, the subscription clones it
        // back out.
        let t = Instant::now();
        for e in &events {
            let shared = Arc::new(e.clone());
            black_box(Event::clone(&shared));
        }
        s.clone2 += t.elapsed();
        black_box(&events);
    }
    Ok(s)
}

// ---------------------------------------------------------------------------------------------
// Reporting.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Baseline,
    Typed,
    Whole,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Baseline => "baseline (serde_json::Value)",
            Variant::Typed => "typed (ClaudeDecoder::decode)",
            Variant::Whole => "whole path (decode→seq→transcript→subscriber)",
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        })
}

fn group(n: f64) -> String {
    let s = format!("{n:.0}");
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn transcript_dir() -> Result<(tempfile::TempDir, &'static str), BoxError> {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::Builder::new()
            .prefix("nucleic-bench-")
            .tempdir_in(shm)
    {
        return Ok((d, "/dev/shm (tmpfs)"));
    }
    let d = tempfile::Builder::new()
        .prefix("nucleic-bench-")
        .tempdir()?;
    Ok((d, "std::env::temp_dir()"))
}

fn stall_note(r: &WholeRun) -> String {
    format!(
        "subscriber stalls >{}ms: {} totalling {:.0}ms, longest gap {:.0}ms",
        STALL.as_millis(),
        r.stalls,
        r.stall_time.as_secs_f64() * 1e3,
        r.max_gap.as_secs_f64() * 1e3
    )
}

/// Where the whole path's time goes: each stage added in turn (3 runs each, median).
fn diagnostics(
    rt: &tokio::runtime::Runtime,
    lines: &Arc<Vec<String>>,
    dir: &Path,
    secs: &BTreeMap<&'static str, Vec<f64>>,
    n: f64,
) -> Result<(), BoxError> {
    const RUNS: usize = 3;
    const BURST: usize = 64;
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let whole_on = |rt: &tokio::runtime::Runtime, tag: &str, shape: Shape| {
        rt.block_on(run_whole(Arc::clone(lines), dir, tag, shape))
            .map(|r| r.elapsed.as_secs_f64())
    };
    let inline = Shape {
        consumer_task: false,
        burst: 1,
    };
    let burst = Shape {
        consumer_task: true,
        burst: BURST,
    };
    let mut t: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut cpu = Vec::new();
    for i in 0..RUNS {
        let mut add = |k, v| t.entry(k).or_default().push(v);
        add(
            "chan",
            rt.block_on(split_channel(Arc::clone(lines), 1, false))?
                .as_secs_f64(),
        );
        add(
            "chan_batched",
            rt.block_on(split_channel_batched(Arc::clone(lines), BURST))?
                .as_secs_f64(),
        );
        add(
            "chan_keep",
            rt.block_on(split_channel(Arc::clone(lines), 1, true))?
                .as_secs_f64(),
        );
        add(
            "chan_burst",
            rt.block_on(split_channel(Arc::clone(lines), BURST, false))?
                .as_secs_f64(),
        );
        add(
            "ctrl",
            rt.block_on(split_controller(
                Arc::clone(lines),
                dir,
                &format!("ctrl-{i}"),
            ))?
            .as_secs_f64(),
        );
        add("inline", whole_on(rt, &format!("inline-{i}"), inline)?);
        add("burst", whole_on(rt, &format!("burst-{i}"), burst)?);
        add(
            "single",
            whole_on(&single, &format!("single-{i}"), Shape::MEASURED)?,
        );
        add(
            "single_burst",
            whole_on(&single, &format!("single-burst-{i}"), burst)?,
        );
        cpu.push(split_cpu(lines)?);
    }
    let med = |k: &str| t.get(k).map_or(f64::NAN, |v| median(v.clone()));
    let cpu_med =
        |f: fn(&CpuSplit) -> Duration| median(cpu.iter().map(|c| f(c).as_secs_f64()).collect());
    let of_rounds = |v: Variant| secs.get(v.name()).map_or(f64::NAN, |v| median(v.clone()));
    let baseline = of_rounds(Variant::Baseline);
    println!(
        "\n== diagnostics: where the whole path's time goes (median of {RUNS}; not part of the verdict)"
    );
    let row = |name: &str, t: f64| {
        println!(
            "  {name:<64} {t:>7.3}s {:>9} lines/s  ({:.2} of baseline throughput)",
            group(n / t),
            baseline / t
        );
    };
    println!("wall time, tokio multi-thread runtime (2 workers) unless noted:");
    row("baseline Value parse (median of the rounds)", baseline);
    row(
        "typed decode alone (median of the rounds)",
        of_rounds(Variant::Typed),
    );
    row("decode → mpsc(1024) → counting task", med("chan"));
    row(
        "decode → mpsc → counting task that frees nothing until the end",
        med("chan_keep"),
    );
    row(
        &format!("decode → mpsc carrying {BURST} lines per message → counting task"),
        med("chan_batched"),
    );
    row(
        &format!("decode → mpsc → counting task, producer bursts of {BURST}"),
        med("chan_burst"),
    );
    row(
        "decode → controller (seq/status/transcript), no subscriber",
        med("ctrl"),
    );
    row(
        "whole path as measured (median of the rounds)",
        of_rounds(Variant::Whole),
    );
    row(
        "whole path, subscriber on the block_on thread, not a task",
        med("inline"),
    );
    row(
        &format!("whole path, producer bursts of {BURST} lines"),
        med("burst"),
    );
    row("whole path on a current_thread runtime", med("single"));
    row(
        &format!("whole path on a current_thread runtime, bursts of {BURST}"),
        med("single_burst"),
    );
    let bytes = cpu.first().map_or(0, |c| c.encoded_bytes);
    println!("CPU per stage, one thread, no runtime (what the path pays per event):");
    let stage = |name: &str, t: f64| {
        println!(
            "  {name:<64} {t:>7.3}s  ({:.2}× baseline time)",
            t / baseline
        );
    };
    let total = cpu_med(|c| c.decode + c.build + c.encode + c.clone2);
    stage("decode", cpu_med(|c| c.decode));
    let raw_lines = cpu.first().map_or(0, |c| c.raw_lines);
    stage(
        &format!(
            "  of which: re-validating the {:.0} % of lines kept as raw",
            raw_lines as f64 * 100.0 / n
        ),
        cpu_med(|c| c.raw_copy),
    );
    stage(
        "build Event (seq, now(), session id, native type)",
        cpu_med(|c| c.build),
    );
    stage(
        &format!("encode for the transcript ({:.1} MB)", bytes as f64 / 1e6),
        cpu_med(|c| c.encode),
    );
    stage(
        "2 deep clones (into the bus Arc, out to the subscriber)",
        cpu_med(|c| c.clone2),
    );
    stage("sum", total);
    Ok(())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), BoxError> {
    // `cargo bench` passes `--bench`; nothing to parse.
    let n_lines = env_usize("PIPELINE_LINES", DEFAULT_LINES);
    let rounds = env_usize("PIPELINE_ROUNDS", DEFAULT_ROUNDS).max(1);
    let diag = env_usize("PIPELINE_DIAG", 1) != 0;
    let profile_whole = env_usize("PIPELINE_PROFILE_WHOLE", 0);

    let t0 = Instant::now();
    let corpus = build_corpus(n_lines)?;
    let lines = Arc::new(corpus.lines);
    let n = lines.len() as f64;
    let mb = corpus.bytes as f64 / 1e6;
    println!("== corpus (seed {SEED}, built in {:.2?})", t0.elapsed());
    println!(
        "lines {}  bytes {} ({:.1} MiB)  mean line {:.1} B (incl. \\n)  sessions {}",
        group(n),
        group(corpus.bytes as f64),
        corpus.bytes as f64 / 1048576.0,
        corpus.bytes as f64 / n,
        corpus.sessions
    );
    let mix: Vec<String> = corpus
        .mix
        .iter()
        .map(|(k, v)| format!("{k} {:.1} %", *v as f64 * 100.0 / n))
        .collect();
    println!("mix: {}", mix.join(", "));

    // Sanity + warm-up (untimed): every line is JSON and the decoder knows every line.
    let mut decoder = ClaudeDecoder::new();
    let mut events = 0usize;
    for line in lines.iter() {
        let _: Value = serde_json::from_str(line)?;
        events += decoder.decode(line).events.len();
    }
    if decoder.unknown_lines() != 0 {
        return Err(format!("decoder found {} unknown lines", decoder.unknown_lines()).into());
    }
    println!(
        "check: all lines parse as JSON; decoder: 0 unknown lines, {} events from {} lines",
        group(events as f64),
        group(n)
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (dir, where_) = transcript_dir()?;
    let dir_path: PathBuf = dir.path().to_path_buf();
    println!(
        "runtime: tokio multi-thread, {} workers; transcript in {where_}: {}",
        rt.metrics().num_workers(),
        dir_path.display()
    );
    // Warm-up of the whole path (untimed).
    let warm = rt.block_on(run_whole(
        Arc::clone(&lines),
        &dir_path,
        "warmup",
        Shape::MEASURED,
    ))?;
    println!(
        "warm-up whole path: {} events, gapless, transcript {:.1} MB, {:.2?} ({})",
        group(warm.events as f64),
        warm.transcript_bytes as f64 / 1e6,
        warm.elapsed,
        stall_note(&warm)
    );

    if profile_whole > 0 {
        // For a profiler: only the whole path, no rounds, no verdict.
        for i in 0..profile_whole {
            let tag = format!("profile-{i}");
            let r = rt.block_on(run_whole(
                Arc::clone(&lines),
                &dir_path,
                &tag,
                Shape::MEASURED,
            ))?;
            println!(
                "whole path {:.3}s ({})",
                r.elapsed.as_secs_f64(),
                stall_note(&r)
            );
        }
        return Ok(());
    }

    let order = [Variant::Baseline, Variant::Typed, Variant::Whole];
    let mut secs: BTreeMap<&'static str, Vec<f64>> = BTreeMap::new();
    let mut typed_ratio = Vec::new();
    let mut whole_ratio = Vec::new();
    println!("\n== rounds ({rounds}, order rotated each round)");
    for round in 0..rounds {
        let mut this: [f64; 3] = [0.0; 3];
        let mut report = Vec::new();
        let mut note = String::new();
        for k in 0..3 {
            let v = order[(k + round) % 3];
            let elapsed = match v {
                Variant::Baseline => run_baseline(&lines)?,
                Variant::Typed => run_typed(&lines),
                Variant::Whole => {
                    let tag = format!("round-{}", round + 1);
                    let r = rt.block_on(run_whole(
                        Arc::clone(&lines),
                        &dir_path,
                        &tag,
                        Shape::MEASURED,
                    ))?;
                    if r.events != warm.events {
                        return Err(format!(
                            "event count changed: {} vs {}",
                            r.events, warm.events
                        )
                        .into());
                    }
                    note = stall_note(&r);
                    r.elapsed
                }
            }
            .as_secs_f64();
            let idx = order.iter().position(|o| *o == v).unwrap_or(0);
            this[idx] = elapsed;
            secs.entry(v.name()).or_default().push(elapsed);
            report.push(format!(
                "{} {:.3}s ({} lines/s)",
                match v {
                    Variant::Baseline => "baseline",
                    Variant::Typed => "typed",
                    Variant::Whole => "whole",
                },
                elapsed,
                group(n / elapsed)
            ));
        }
        // Ratios of throughput: baseline time ÷ variant time.
        let tr = this[0] / this[1];
        let wr = this[0] / this[2];
        typed_ratio.push(tr);
        whole_ratio.push(wr);
        println!(
            "round {}: {}  | typed÷baseline {tr:.2}  whole÷baseline {wr:.2}\n         whole: {note}",
            round + 1,
            report.join(", ")
        );
    }

    println!("\n== per variant: median (min–max)");
    println!("{:<48} {:>30} {:>22}", "variant", "lines/s", "MB/s");
    for v in order {
        let s = &secs[v.name()];
        let lps: Vec<f64> = s.iter().map(|t| n / t).collect();
        let mbs: Vec<f64> = s.iter().map(|t| mb / t).collect();
        let (l0, l1) = min_max(&lps);
        let (m0, m1) = min_max(&mbs);
        println!(
            "{:<48} {:>30} {:>22}",
            v.name(),
            format!(
                "{} ({}–{})",
                group(median(lps.clone())),
                group(l0),
                group(l1)
            ),
            format!("{:.1} ({:.1}–{:.1})", median(mbs.clone()), m0, m1)
        );
    }
    println!(
        "whole path: {} events per run ({:.2} events/line), transcript {:.1} MB per run",
        group(warm.events as f64),
        warm.events as f64 / n,
        warm.transcript_bytes as f64 / 1e6
    );

    let (t0r, t1r) = min_max(&typed_ratio);
    let (w0r, w1r) = min_max(&whole_ratio);
    let tm = median(typed_ratio.clone());
    let wm = median(whole_ratio.clone());
    println!("\n== same-round ratios (throughput ÷ baseline throughput): median (min–max)");
    println!("typed ÷ baseline  {tm:.2} ({t0r:.2}–{t1r:.2})   target ≥ 1.00");
    println!("whole ÷ baseline  {wm:.2} ({w0r:.2}–{w1r:.2})   target ≥ 0.50");
    println!(
        "{}: typed decode at least as fast as a bare Value parse (median {tm:.2})",
        if tm >= 1.0 { "PASS" } else { "FAIL" }
    );
    println!(
        "{}: whole path at least half as fast as a bare Value parse (median {wm:.2})",
        if wm >= 0.5 { "PASS" } else { "FAIL" }
    );
    if diag {
        diagnostics(&rt, &lines, &dir_path, &secs, n)?;
    }
    drop(dir);
    println!("total bench time {:.1?}", t0.elapsed());
    Ok(())
}
