//! Where a session's start spends its time: phases of `new_session` timed, and printed to
//! stderr as one line when `NUCLEIC_TRACE_START` is set (for benches and slow-start reports).

use std::time::Instant;

/// The variable that turns the trace on.
pub const TRACE_START_VARIABLE: &str = "NUCLEIC_TRACE_START";

/// Phases of one session start; does nothing unless [`TRACE_START_VARIABLE`] is set.
#[derive(Debug)]
pub(crate) struct StartTrace {
    started: Option<Instant>,
    last: Option<Instant>,
    marks: Vec<(&'static str, u128)>,
}

impl StartTrace {
    pub(crate) fn new() -> StartTrace {
        let now = std::env::var_os(TRACE_START_VARIABLE).is_some().then(Instant::now);
        StartTrace { started: now, last: now, marks: Vec::new() }
    }

    /// Ends the phase `name` (the time since the previous mark).
    pub(crate) fn mark(&mut self, name: &'static str) {
        let Some(last) = self.last else { return };
        let now = Instant::now();
        self.marks.push((name, now.duration_since(last).as_micros()));
        self.last = Some(now);
    }

    /// Prints `start <id>: phase 1.2 ms, … = total` (when on).
    pub(crate) fn finish(&self, session_id: &str) {
        let Some(started) = self.started else { return };
        let phases: Vec<String> = self
            .marks
            .iter()
            .map(|(name, micros)| format!("{name} {:.1}", *micros as f64 / 1000.0))
            .collect();
        eprintln!(
            "nucleic: start {session_id}: {} = {:.1} ms",
            phases.join(", "),
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
}
