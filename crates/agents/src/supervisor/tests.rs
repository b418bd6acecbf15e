//! The supervisor with fake agents: `sh -c` scripts and in-memory streams, under a test protocol
//! and under each backend's own.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nucleic_protocol::{ErrorCode, EventKind, RawJson, RunFinished, RunOutcome};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::sync::mpsc;

use super::*;
use crate::agent::NativeEvent;
use crate::claude::run_claude;
use crate::codex::{CodexExecOptions, CodexOptions, run_codex, run_codex_exec};
use crate::process::{SpawnSpec, signal_group};

/// How long any one test waits for its agent's outputs.
const WAIT: Duration = Duration::from_secs(20);

/// How long [`EchoDecoder`] takes over a line of [`readers::DECODE_APART_BYTES`] or more.
const SLOW_DECODE: Duration = Duration::from_secs(4);

/// One `raw` event per line; a line `ask:X` asks to be answered `answer:X` on the agent's input.
#[derive(Debug, Default)]
struct EchoDecoder {
    unknown: u64,
}

impl LineDecoder for EchoDecoder {
    type Control = String;
    fn decode_line(&mut self, line: &str) -> DecodedLine<String> {
        assert!(!line.starts_with("PANIC"), "a decoder bug");
        if line.len() >= readers::DECODE_APART_BYTES {
            // A parse that takes its time: long lines are decoded apart (see the test below).
            std::thread::sleep(SLOW_DECODE);
        }
        if line == "???" {
            self.unknown += 1;
        }
        DecodedLine {
            native_type: "line".into(),
            events: vec![EventKind::raw(RawJson::from_value(&Value::String(line.into())))],
            control: line.strip_prefix("ask:").map(str::to_owned),
        }
    }
    fn unknown_lines(&self) -> u64 {
        self.unknown
    }
}

/// What the test protocol saw at the end of the run.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    stop_requested: bool,
    last_stderr: Option<String>,
    drained: bool,
}

#[derive(Debug, Clone)]
struct Echo {
    process: Arc<AgentProcess>,
    stall: Arc<Mutex<Option<String>>>,
    seen: Arc<Mutex<Option<Seen>>>,
}

impl Protocol for Echo {
    type Decoder = EchoDecoder;

    fn on_line(&self, line: &mut DecodedLine<String>) {
        if line.events.len() == 1 && line.control.is_some() {
            line.native_type = "ask".into();
        }
    }

    async fn on_control(&self, control: String) -> Result<(), AgentError> {
        self.process.write_line(&format!("answer:{control}")).await
    }

    fn stalled(&self, _limit: Duration) -> Option<String> {
        self.stall.lock().unwrap().clone()
    }

    async fn finish(&self, exit: ProcessExit<EchoDecoder>) -> RunFinished {
        *self.seen.lock().unwrap() = Some(Seen {
            stop_requested: exit.stop_requested,
            last_stderr: exit.last_stderr,
            drained: exit.decoder.is_some(),
        });
        RunFinished::new(RunOutcome::Completed, None, exit.end.code)
    }
}

fn small(max_line: usize) -> Supervision {
    Supervision { max_line, drain: Duration::from_millis(300), ..Supervision::default() }
}

fn sh(script: &str) -> (Arc<AgentProcess>, Streams) {
    let spec = SpawnSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        isolation: None,
    };
    launch(&spec).unwrap()
}

fn echo(
    (process, streams): (Arc<AgentProcess>, Streams),
    supervision: Supervision,
) -> (Echo, mpsc::Receiver<AgentOutput>) {
    let protocol = Echo { process: process.clone(), stall: Arc::default(), seen: Arc::default() };
    let rx = supervise(process, streams, protocol.clone(), EchoDecoder::default(), supervision);
    (protocol, rx)
}

/// Every batch until the exit, and the exit.
async fn collect(rx: &mut mpsc::Receiver<AgentOutput>) -> (Vec<Vec<NativeEvent>>, RunFinished) {
    let mut batches = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, rx.recv()).await {
            Err(_) => panic!("no exit within {WAIT:?}; batches so far: {batches:#?}"),
            Ok(None) => panic!("the outputs ended without Exited: {batches:#?}"),
            Ok(Some(AgentOutput::Events(events))) => batches.push(events),
            Ok(Some(AgentOutput::Exited(finished))) => {
                // A reader blocked on a pipe a descendant holds keeps the channel open: look
                // only for a while.
                let after = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await;
                assert!(matches!(after, Err(_) | Ok(None)), "nothing follows Exited: {after:?}");
                return (batches, finished);
            }
        }
    }
}

fn raw_texts(batches: &[Vec<NativeEvent>]) -> Vec<String> {
    batches
        .iter()
        .flatten()
        .filter_map(|e| match &e.kind {
            EventKind::Raw(raw) => match serde_json::to_value(&raw.native).unwrap() {
                Value::String(s) => Some(s),
                other => Some(other.to_string()),
            },
            _ => None,
        })
        .collect()
}

fn errors(batches: &[Vec<NativeEvent>]) -> Vec<(ErrorCode, String)> {
    batches
        .iter()
        .flatten()
        .filter_map(|e| match &e.kind {
            EventKind::Error(x) => Some((x.code, x.message.clone())),
            _ => None,
        })
        .collect()
}

/// The oversized line's events, as every backend must report them: a short `raw` preview of its
/// head (no native type) and a `decode` error naming its length and the cap.
fn assert_oversized_reported(batches: &[Vec<NativeEvent>], len: usize, cap: usize) {
    let events: Vec<&NativeEvent> = batches.iter().flatten().collect();
    let at = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::Error(x) if x.code == ErrorCode::Decode && x.message.contains("cap")))
        .unwrap_or_else(|| panic!("no oversized-line error: {events:#?}"));
    assert!(at >= 1, "{events:#?}");
    let EventKind::Raw(preview) = &events[at - 1].kind else {
        panic!("no raw preview before the error: {events:#?}")
    };
    assert_eq!(events[at - 1].native_type, None);
    assert_eq!(serde_json::to_value(&preview.native).unwrap(), Value::String("x".repeat(200)));
    let EventKind::Error(error) = &events[at].kind else { unreachable!() };
    assert_eq!(
        error.message,
        format!("agent wrote a {len}-byte line, over the {cap}-byte cap; kept its start only")
    );
}

/// Supervises `agent` with `backend`'s protocol and decoder (`test`: [`Echo`]), a 1 KiB line cap.
fn run_backend(
    backend: &str,
    (process, streams): (Arc<AgentProcess>, Streams),
    cwd: &std::path::Path,
) -> mpsc::Receiver<AgentOutput> {
    let supervision = small(1024);
    match backend {
        "test" => echo((process, streams), supervision).1,
        "claude" => run_claude(process, streams, supervision, false).1,
        "codex" => {
            let opts = CodexOptions::new("codex".into(), cwd.to_owned());
            run_codex(&opts, process, streams, supervision, false).1
        }
        "codex exec" => {
            let opts = CodexExecOptions::new("codex".into(), cwd.to_owned());
            run_codex_exec(&opts, process, streams, supervision).1
        }
        other => panic!("no backend {other}"),
    }
}

const OVERSIZED: &str = "head -c 5000 /dev/zero | tr '\\0' x; echo";

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_line_is_a_preview_and_an_error_and_the_stream_goes_on() {
    let (_, mut rx) = echo(sh(&format!("echo before; {OVERSIZED}; echo after")), small(1024));
    let (batches, finished) = collect(&mut rx).await;
    assert_oversized_reported(&batches, 5000, 1024);
    let texts = raw_texts(&batches);
    assert_eq!(texts.first().map(String::as_str), Some("before"));
    assert_eq!(texts.last().map(String::as_str), Some("after"));
    assert_eq!(finished.exit_code, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_backend_reports_an_oversized_line_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_owned();
    for backend in ["claude", "codex", "codex exec"] {
        let mut rx = run_backend(backend, sh(OVERSIZED), &cwd);
        let (batches, finished) = collect(&mut rx).await;
        assert_oversized_reported(&batches, 5000, 1024);
        assert_eq!(finished.unknown_lines, 0, "{backend}: a cut line is not decoded");
    }
}

/// Gives `data`, then fails.
struct FailingReader(std::io::Cursor<Vec<u8>>);

impl AsyncRead for FailingReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut self.0).poll_read(cx, buf))?;
        if buf.filled().len() == before {
            return std::task::Poll::Ready(Err(std::io::Error::other("the disk is on fire")));
        }
        std::task::Poll::Ready(Ok(()))
    }
}

fn failing_streams() -> (Arc<AgentProcess>, Streams) {
    let stdout = FailingReader(std::io::Cursor::new(b"not json but a line\n".to_vec()));
    let exit = async { ProcessEnd { code: Some(0), signal: None } };
    let process = Arc::new(AgentProcess::new(tokio::io::sink(), None));
    (process, Streams::new(stdout, tokio::io::empty(), exit))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_backend_reports_a_read_error() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_owned();
    for backend in ["test", "claude", "codex", "codex exec"] {
        let mut rx = run_backend(backend, failing_streams(), &cwd);
        let (batches, _) = collect(&mut rx).await;
        let expected = (
            ErrorCode::AgentExited,
            "reading the agent's output failed: the disk is on fire".to_owned(),
        );
        assert!(errors(&batches).contains(&expected), "{backend}: {batches:#?}");
    }
}

/// A pipe that gets `lines`, one at a time, `delay` apart (written by a task), then ends.
fn slow_lines(lines: Vec<String>, delay: Duration) -> OutputReader {
    let (reader, mut writer) = tokio::io::simplex(64);
    tokio::spawn(async move {
        for line in lines {
            tokio::time::sleep(delay).await;
            writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        }
        // A split simplex ends for its reader only when shut down, not dropped.
        writer.shutdown().await.unwrap();
    });
    Box::new(reader)
}

fn numbered(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("line {i}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn output_still_arriving_after_the_exit_is_drained_before_the_exit_is_reported() {
    // The process is gone at once; its output takes 40 × 25 ms = 1 s, over three times the
    // drain period, to arrive: it keeps coming, so it is all read.
    let stdout = slow_lines(numbered(40), Duration::from_millis(25));
    let exit = async { ProcessEnd { code: Some(0), signal: None } };
    let process = Arc::new(AgentProcess::new(tokio::io::sink(), None));
    let (protocol, mut rx) =
        echo((process, Streams::new(stdout, tokio::io::empty(), exit)), small(1024));
    let (batches, _) = collect(&mut rx).await;
    assert_eq!(raw_texts(&batches), numbered(40));
    assert!(errors(&batches).is_empty(), "{batches:#?}");
    assert!(protocol.seen.lock().unwrap().as_ref().unwrap().drained);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_childs_output_is_all_read_before_its_exit() {
    let (_, mut rx) = echo(sh("seq 1 20000; echo oops >&2; exit 3"), Supervision::default());
    let (batches, finished) = collect(&mut rx).await;
    let texts = raw_texts(&batches);
    assert_eq!(texts.len(), 20000);
    assert_eq!(texts.last().map(String::as_str), Some("20000"));
    assert_eq!(finished.exit_code, Some(3));
    assert!(batches.iter().all(|b| b.len() <= MAX_BATCH + 1), "batches stay under the cap");
}

#[tokio::test(flavor = "multi_thread")]
async fn output_held_open_by_a_descendant_is_given_up_with_a_timeout_error() {
    let (process, streams) = sh("sleep 30 2>/dev/null & echo one; echo last words >&2; exit 0");
    let pid = process.pid().unwrap();
    let started = Instant::now();
    let (protocol, mut rx) = echo((process, streams), small(1024));
    let (batches, finished) = collect(&mut rx).await;
    signal_group(pid, nix::sys::signal::Signal::SIGKILL);
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(raw_texts(&batches), ["one"]);
    let timeouts: Vec<String> = errors(&batches)
        .into_iter()
        .filter(|(c, _)| *c == ErrorCode::Timeout)
        .map(|e| e.1)
        .collect();
    assert_eq!(timeouts.len(), 1, "{batches:#?}");
    assert!(timeouts[0].contains("output stayed open"), "{timeouts:?}");
    assert_eq!(finished.exit_code, Some(0));
    let seen = protocol.seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        seen,
        Seen { stop_requested: false, last_stderr: Some("last words".into()), drained: false }
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_is_buffered_is_batched_up_to_the_cap() {
    let data = numbered(300).join("\n") + "\n";
    let exit = async { ProcessEnd { code: Some(0), signal: None } };
    let process = Arc::new(AgentProcess::new(tokio::io::sink(), None));
    let streams = Streams::new(std::io::Cursor::new(data), tokio::io::empty(), exit);
    let (_, mut rx) = echo((process, streams), Supervision::default());
    let (batches, _) = collect(&mut rx).await;
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(sizes, [128, 128, 44]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_line_that_arrives_alone_is_handed_over_alone() {
    let stdout = slow_lines(numbered(5), Duration::from_millis(20));
    let exit = async { ProcessEnd { code: Some(0), signal: None } };
    let process = Arc::new(AgentProcess::new(tokio::io::sink(), None));
    let (_, mut rx) = echo((process, Streams::new(stdout, tokio::io::empty(), exit)), small(64));
    let (batches, _) = collect(&mut rx).await;
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(sizes, [1, 1, 1, 1, 1], "{batches:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn control_traffic_is_answered_on_the_agents_input() {
    let script = "echo ask:42; read -r reply; echo \"got $reply\"; echo '???'";
    let (_, mut rx) = echo(sh(script), Supervision::default());
    let (batches, finished) = collect(&mut rx).await;
    assert_eq!(raw_texts(&batches), ["ask:42", "got answer:42", "???"]);
    assert_eq!(batches[0][0].native_type.as_deref(), Some("ask"), "on_line ran");
    assert_eq!(finished.unknown_lines, 1, "the decoder's count is reported");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_agent_is_reported_and_stopped() {
    let (protocol, mut rx) = echo(
        sh("echo started; sleep 30"),
        Supervision { watchdog: Some(Duration::from_millis(100)), ..Supervision::default() },
    );
    *protocol.stall.lock().unwrap() = Some("nothing happened for a while".into());
    let (batches, finished) = collect(&mut rx).await;
    assert!(
        errors(&batches).contains(&(ErrorCode::Timeout, "nothing happened for a while".to_owned())),
        "{batches:#?}"
    );
    assert_eq!(finished.exit_code, None, "killed by a signal");
    assert!(protocol.seen.lock().unwrap().as_ref().unwrap().stop_requested);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_nobody_listens_to_is_stopped() {
    let (protocol, rx) = echo(sh("while true; do echo spam; done"), Supervision::default());
    drop(rx);
    let pid = protocol.process.pid().unwrap();
    for _ in 0..200 {
        if crate::process::proc_stat(pid).is_none_or(|s| s.zombie) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(crate::process::proc_stat(pid).is_none_or(|s| s.zombie), "{pid} still runs");
}

#[tokio::test]
async fn a_write_the_agent_never_reads_times_out_and_closes_the_input() {
    // A 16-byte pipe nobody reads.
    let (input, _unread) = tokio::io::duplex(16);
    let process = AgentProcess::new(input, None).with_input_deadline(Duration::from_millis(100));
    let started = Instant::now();
    let error = process.write_line(&"x".repeat(1000)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(error, AgentError::Timeout { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "writing 1001 bytes to the agent's input (it is not reading; input closed) timed out after 0.1 s"
    );
    assert!(!process.input_open().await);
    assert!(matches!(process.write_line("again").await, Err(AgentError::InputClosed)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_waiting_for_input_cost_the_host_no_thread_each() {
    let threads = || std::fs::read_dir("/proc/self/task").unwrap().count();
    let before = threads();
    let mut runs = Vec::new();
    for _ in 0..40 {
        let (protocol, mut rx) = echo(sh("echo ready; exec sleep 30"), Supervision::default());
        match tokio::time::timeout(WAIT, rx.recv()).await {
            Ok(Some(AgentOutput::Events(_))) => {}
            other => panic!("no first line: {other:?}"),
        }
        runs.push((protocol, rx));
    }
    // Read by tasks: 40 agents with both streams open add a few blocking-pool threads at most
    // (spawning), never two per agent as reader threads did.
    let added = threads().saturating_sub(before);
    for (protocol, _) in &runs {
        protocol.process.stop(Duration::from_millis(100));
    }
    for (_, rx) in &mut runs {
        collect(rx).await;
    }
    assert!(added < 20, "{added} threads for 40 idle agents");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_does_not_read_its_answer_holds_up_no_other_agent() {
    // A asks with a 200 KB line, so the answer (as long) fills its input pipe, which it never
    // reads: answering it waits on that write (up to the input deadline) in A's reader.
    let asking = "head -c 200000 /dev/zero | tr '\\0' a | sed 's/^/ask:/'; echo; exec sleep 30";
    let (slow, mut slow_rx) = echo(sh(asking), Supervision::default());
    tokio::time::sleep(Duration::from_millis(500)).await;
    // B, meanwhile, is read and finishes as if A were not there.
    let started = Instant::now();
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.05; done";
    let (_, mut rx) = echo(sh(script), Supervision::default());
    let (batches, finished) = collect(&mut rx).await;
    assert_eq!(raw_texts(&batches).len(), 10, "{batches:#?}");
    assert_eq!(finished.exit_code, Some(0));
    assert!(started.elapsed() < Duration::from_secs(5), "B took {:?}", started.elapsed());
    // A line's events are handed over once its control traffic is answered: A's reader is
    // still in that write.
    assert!(slow_rx.try_recv().is_err(), "A's answer went through: the test proves nothing");
    slow.process.stop(Duration::from_millis(100));
    let (batches, _) = collect(&mut slow_rx).await;
    assert_eq!(raw_texts(&batches).len(), 1, "A's ask arrives in the end");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_line_is_decoded_apart_and_holds_up_no_other_agent() {
    // A writes one line over the threshold; its decode takes SLOW_DECODE.
    let long = "head -c 1100000 /dev/zero | tr '\\0' x; echo; exec sleep 30";
    let (slow, mut slow_rx) = echo(sh(long), Supervision::default());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo line $i; sleep 0.05; done";
    let (_, mut rx) = echo(sh(script), Supervision::default());
    let (batches, _) = collect(&mut rx).await;
    assert_eq!(raw_texts(&batches).len(), 10, "{batches:#?}");
    let took = started.elapsed();
    assert!(took < SLOW_DECODE - Duration::from_millis(1500), "B waited for A's decode: {took:?}");
    // A's line arrives whole once decoded.
    match tokio::time::timeout(WAIT, slow_rx.recv()).await {
        Ok(Some(AgentOutput::Events(events))) => {
            assert_eq!(raw_texts(&[events])[0].len(), 1_100_000);
        }
        other => panic!("A's line never came: {other:?}"),
    }
    slow.process.stop(Duration::from_millis(100));
    collect(&mut slow_rx).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decoder_that_panics_ends_the_run_with_a_host_error_long_line_or_not() {
    let long = "printf PANIC; head -c 1100000 /dev/zero | tr '\\0' x; echo";
    for script in ["echo before; echo PANIC; echo after", long] {
        // The drain is not under test here: a loaded machine must not turn the end into one.
        let supervision = Supervision { drain: Duration::from_secs(10), ..small(2 << 20) };
        let (_, mut rx) = echo(sh(script), supervision);
        let (batches, finished) = collect(&mut rx).await;
        let failed: Vec<String> = errors(&batches)
            .into_iter()
            .filter(|(c, m)| {
                *c == ErrorCode::Host && m.starts_with("decoding the agent's output failed")
            })
            .map(|e| e.1)
            .collect();
        assert_eq!(failed.len(), 1, "{script}: {batches:#?}");
        assert!(failed[0].contains("panic"), "{failed:?}");
        assert_eq!(finished.exit_code, Some(0));
    }
}
