//! Stream throughput against a bare `serde_json::Value` parse of the same lines, measured in one
//! process so that only same-round ratios are compared (this machine is noisy).
//!
//! - `baseline`: `serde_json::from_str::<Value>` per line, from memory.
//! - `typed`: `ClaudeDecoder::decode` per line, from memory.
//! - `whole`: the real path — an agent process (`cat` of the corpus) → the Claude adapter's
//!   stdout pump and decoder → `SessionController` (seq, status, transcript append) → a
//!   subscriber from seq 1, until the stream ends.
//!
//! Run: `cargo bench -p nucleic-core --bench pipeline` (`PIPELINE_LINES`, `PIPELINE_ROUNDS`).

use std::error::Error;
use std::hint::black_box;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use nucleic_agents::claude::{ClaudeDecoder, ClaudeOptions, spawn_claude};
use nucleic_core::{SessionConfig, SessionController};
use nucleic_protocol::{Backend, EventKind};
use serde_json::Value;

type BoxError = Box<dyn Error + Send + Sync>;

const SAMPLES: &str = include_str!("../../agents/tests/fixtures/claude-2.1.332.samples.jsonl");
const WORDS: &[&str] = &[
    "the", "file", "test", "build", "check", "function", "error", "module", "should", "write",
    "config", "update", "because", "returns", "value", "path", "crate", "session", "is", "to",
    "and", "not", "this", "output", "line", "handler", "fix", "cargo", "passes", "`code`", "—",
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
    fn id(&mut self, prefix: &str) -> String {
        format!("{prefix}{:016x}{:08x}", self.next(), self.next() as u32)
    }
}

fn sample(name: &str) -> Result<Value, BoxError> {
    for line in SAMPLES.lines() {
        let v: Value = serde_json::from_str(line)?;
        if v["sample"] == name {
            return Ok(serde_json::from_str(v["line"].as_str().unwrap_or_default())?);
        }
    }
    Err(format!("sample {name} missing").into())
}

fn set(v: &mut Value, ptr: &str, to: Value) {
    if let Some(slot) = v.pointer_mut(ptr) {
        *slot = to;
    }
}

/// ≥ `lines` real CLI lines (compact JSON, as the CLI writes them) grouped into whole sessions
/// like the reference corpus: init, 5–15 iterations of [message_start, block start, 2–10 text
/// deltas, block stop, message_delta, message_stop, assistant, tool_result on tool iterations],
/// then result.
fn corpus(lines: usize) -> Result<Vec<String>, BoxError> {
    let names = [
        "system/init",
        "stream_event/message_start",
        "stream_event/content_block_start/text",
        "stream_event/content_block_delta/text_delta",
        "stream_event/content_block_stop",
        "stream_event/message_delta",
        "stream_event/message_stop",
        "assistant/text",
        "assistant/tool_use",
        "user/tool_result",
        "result/success",
    ];
    let t: Vec<Value> = names.iter().map(|n| sample(n)).collect::<Result<_, _>>()?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::with_capacity(lines + 200);
    fn push(out: &mut Vec<String>, v: &Value) {
        out.push(serde_json::to_string(v).unwrap_or_default());
    }
    while out.len() < lines {
        let session = rng.id("sess-");
        let mut init = t[0].clone();
        set(&mut init, "/session_id", session.clone().into());
        push(&mut out, &init);
        for _ in 0..rng.range(5, 15) {
            let msg = rng.id("msg_");
            let stream = |v: &Value, rng: &mut Rng| {
                let mut v = v.clone();
                set(&mut v, "/api_message_id", msg.clone().into());
                set(&mut v, "/uuid", rng.id("").into());
                v
            };
            push(&mut out, &stream(&t[1], &mut rng));
            push(&mut out, &stream(&t[2], &mut rng));
            let mut text = String::new();
            for _ in 0..rng.range(2, 10) {
                let mut d = stream(&t[3], &mut rng);
                let chunk = rng.words(3, 12);
                text.push_str(&chunk);
                set(&mut d, "/event/delta/text", chunk.into());
                push(&mut out, &d);
            }
            push(&mut out, &stream(&t[4], &mut rng));
            push(&mut out, &stream(&t[5], &mut rng));
            push(&mut out, &stream(&t[6], &mut rng));
            let tool = rng.range(0, 1) == 1;
            let mut a = if tool { t[8].clone() } else { t[7].clone() };
            set(&mut a, "/message/id", msg.clone().into());
            let tool_id = rng.id("toolu_");
            if tool {
                set(&mut a, "/message/content/0/id", tool_id.clone().into());
            } else {
                set(&mut a, "/message/content/0/text", text.into());
            }
            push(&mut out, &a);
            if tool {
                let mut r = t[9].clone();
                set(&mut r, "/message/content/0/tool_use_id", tool_id.into());
                set(&mut r, "/message/content/0/content", rng.words(5, 40).into());
                push(&mut out, &r);
            }
        }
        let mut result = t[10].clone();
        set(&mut result, "/session_id", session.into());
        push(&mut out, &result);
    }
    Ok(out)
}

fn baseline(lines: &[String]) {
    for l in lines {
        black_box(serde_json::from_str::<Value>(l).ok());
    }
}

fn typed(lines: &[String]) {
    let mut decoder = ClaudeDecoder::new();
    for l in lines {
        black_box(decoder.decode(l));
    }
}

/// The whole path; returns the number of events the subscriber saw (checked gapless).
fn whole(
    rt: &tokio::runtime::Runtime,
    agent: &Path,
    work: &Path,
    round: usize,
) -> Result<u64, BoxError> {
    rt.block_on(async {
        let mut opts = ClaudeOptions::new(agent.to_owned(), work.to_owned());
        opts.backend = Backend::ClaudeCode;
        let (handle, outputs) = spawn_claude(&opts)?;
        let config = SessionConfig {
            session_id: format!("bench-{round}"),
            backend: Backend::ClaudeCode,
            transcript: work.join(format!("t{round}/transcript.jsonl")),
            approval_timeout: None,
            created: None,
            keep_open: false,
            policy: None,
        };
        let session = SessionController::start(config, handle, outputs)?;
        let mut sub = session.subscribe(1)?;
        let consumer = tokio::spawn(async move {
            let mut n = 0u64;
            let mut finished = false;
            while let Some(e) = sub.next().await? {
                n += 1;
                if e.seq != n {
                    return Err(BoxError::from(format!("seq gap: got {} expected {n}", e.seq)));
                }
                finished |= matches!(e.kind, EventKind::RunFinished(_));
            }
            if !finished {
                return Err("no runFinished".into());
            }
            Ok(n)
        });
        let n = consumer.await??;
        std::fs::remove_dir_all(work.join(format!("t{round}")))?;
        Ok(n)
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn summary(name: &str, v: &[f64]) -> String {
    let mut s = v.to_vec();
    let m = median(&mut s);
    format!("{name}: {m:.2} ({:.2}–{:.2})", s[0], s[s.len() - 1])
}

fn main() -> Result<(), BoxError> {
    let n: usize =
        std::env::var("PIPELINE_LINES").ok().and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rounds: usize =
        std::env::var("PIPELINE_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let lines = corpus(n)?;
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let stream = lines.iter().filter(|l| l.contains(r#""type":"stream_event""#)).count();
    println!(
        "corpus: {} lines, {:.1} MB, mean {:.0} B/line, stream_event {:.1} %",
        lines.len(),
        bytes as f64 / 1e6,
        bytes as f64 / lines.len() as f64,
        100.0 * stream as f64 / lines.len() as f64
    );
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let work = tempfile::tempdir_in(&base)?;
    println!("transcripts and corpus file in {}", base.display());
    let corpus_file = work.path().join("corpus.jsonl");
    let mut f = std::fs::File::create(&corpus_file)?;
    for l in &lines {
        writeln!(f, "{l}")?;
    }
    let agent: PathBuf = work.path().join("agent.sh");
    std::fs::write(&agent, format!("#!/bin/sh\nexec cat '{}'\n", corpus_file.display()))?;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755))?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    let (mut base_rate, mut typed_ratio, mut whole_ratio) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut secs = [0.0f64; 3];
        let mut events = 0;
        for k in 0..3 {
            let which = (k + round) % 3;
            let t = Instant::now();
            match which {
                0 => baseline(&lines),
                1 => typed(&lines),
                _ => events = whole(&rt, &agent, work.path(), round)?,
            }
            secs[which] = t.elapsed().as_secs_f64();
        }
        let rate = |s: f64| lines.len() as f64 / s;
        println!(
            "round {round}: baseline {:.0} lines/s, typed {:.0}, whole {:.0} ({events} events)",
            rate(secs[0]),
            rate(secs[1]),
            rate(secs[2])
        );
        base_rate.push(rate(secs[0]));
        typed_ratio.push(secs[0] / secs[1]);
        whole_ratio.push(secs[0] / secs[2]);
    }
    let mut t = typed_ratio.clone();
    let mut w = whole_ratio.clone();
    println!(
        "{}",
        summary(
            "baseline lines/s (thousands)",
            &base_rate.iter().map(|r| r / 1e3).collect::<Vec<_>>()
        )
    );
    println!(
        "{}  target ≥ 1.00: {}",
        summary("typed ÷ baseline", &typed_ratio),
        verdict(median(&mut t) >= 1.0)
    );
    println!(
        "{}  target ≥ 0.50: {}",
        summary("whole ÷ baseline", &whole_ratio),
        verdict(median(&mut w) >= 0.5)
    );
    Ok(())
}

fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}
