//! The end of a run: waiting for the exit, draining the output the agent wrote before it (with
//! a deadline that moves while lines still arrive), reporting how the run ended; and the
//! watchdog that gives up on a stalled agent.

use std::time::Duration;

use nucleic_protocol::ErrorCode;
use tokio::task::JoinHandle;

use super::readers::Run;
use super::{ExitFuture, LineDecoder, ProcessExit, Protocol, host_error};
use crate::agent::{AgentOutput, host_events};

/// How long a stalled agent gets between SIGTERM and SIGKILL.
const STALL_GRACE: Duration = Duration::from_secs(2);

/// What became of the stdout reader after the exit.
enum Drained<D> {
    Done(D),
    /// Its task panicked (a decoder bug): the decoder is lost.
    Failed(String),
    /// Lines stopped coming for the drain period and the output did not end.
    GaveUp,
}

/// Waits for the exit, then for the readers, then reports how the run ended (always last).
pub(super) async fn supervise_exit<P: Protocol>(
    run: Run,
    protocol: P,
    exit: ExitFuture,
    mut stdout_task: JoinHandle<P::Decoder>,
    stderr_task: JoinHandle<()>,
) {
    // The agent's lifetime: no deadline here (the watchdog and `stop` end a stuck agent).
    let end = exit.await;
    run.process.mark_ended();
    let drain = run.supervision.drain;
    // Normally stdout ends with the process; a descendant holding it open must not delay the
    // exit report forever. Output still arriving keeps the wait going.
    let drained = loop {
        let before = run.frames_read();
        match tokio::time::timeout(drain, &mut stdout_task).await {
            Ok(Ok(decoder)) => break Drained::Done(decoder),
            Ok(Err(e)) => break Drained::Failed(e.to_string()),
            Err(_) if run.frames_read() != before => {}
            Err(_) => break Drained::GaveUp,
        }
    };
    let secs = drain.as_secs_f32();
    let mut late = Vec::new();
    let decoder = match drained {
        Drained::Done(decoder) => Some(decoder),
        Drained::Failed(why) => {
            late.push(host_error(
                ErrorCode::Host,
                format!("decoding the agent's output failed: {why}"),
            ));
            None
        }
        Drained::GaveUp => {
            late.push(host_error(
                ErrorCode::Timeout,
                format!(
                    "the agent's output stayed open with nothing new for {secs} s after it exited (a process it started still holds it); the rest is not read"
                ),
            ));
            None
        }
    };
    run.process.close_input().await;
    if tokio::time::timeout(drain, stderr_task).await.is_err() {
        late.push(host_error(
            ErrorCode::Timeout,
            format!(
                "the agent's stderr stayed open {secs} s after it exited (a process it started still holds it); the rest is not read"
            ),
        ));
    }
    let unknown_lines = decoder.as_ref().map_or(0, LineDecoder::unknown_lines);
    let facts = ProcessExit {
        end,
        stop_requested: run.process.stop_requested(),
        last_stderr: run.last_stderr(),
        decoder,
    };
    let mut finished = protocol.finish(facts).await;
    finished.unknown_lines = unknown_lines;
    let mut last = Vec::new();
    if !late.is_empty() {
        last.push(AgentOutput::Events(host_events(late)));
    }
    last.push(AgentOutput::Exited(finished));
    // A reader still sending holds the gate; it waits only on the controller taking outputs.
    run.close_with(last).await;
}

/// Asks `protocol` every tick whether the agent stalled; if so, reports why as a `timeout`
/// error and stops the agent. Ends with the process or a stop.
pub(super) async fn watchdog<P: Protocol>(run: Run, protocol: P, limit: Duration) {
    let tick = (limit / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::time::sleep(tick).await;
        if run.process.ended() || run.process.stop_requested() {
            return;
        }
        if let Some(why) = protocol.stalled(limit) {
            let error = AgentOutput::Events(host_events(vec![host_error(ErrorCode::Timeout, why)]));
            run.send(error).await;
            run.process.stop(STALL_GRACE);
            return;
        }
    }
}
