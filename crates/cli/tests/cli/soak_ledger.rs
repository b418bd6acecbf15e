//! What the soak's client saw of each session (every event it received, the transcript prefix it
//! verified on disk, the state of its turns) and the checks that compare the two.

use std::path::Path;
use std::time::Instant;

use serde_json::Value;

/// Counters the soak prints at the end.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    /// Events received live and compared with their transcript line.
    pub events_checked: u64,
    /// Events replayed from seq 1 through the protocol and compared with what was received.
    pub replayed_checked: u64,
    /// Turns that began (a `userText` of ours).
    pub turns_started: u64,
    /// Turns that ended with `turnCompleted`.
    pub turns_completed: u64,
    /// …of which were in flight when the host was killed and completed without a new prompt
    /// (their agent survived the host).
    pub turns_survived_kill: u64,
    /// …of which began as a follow-up to a run the host's death interrupted (a resumption).
    pub turns_resumed: u64,
    /// Turns ended by `runFinished { outcome: interrupted }`.
    pub turns_interrupted: u64,
    /// Turns ended by another `runFinished` outcome (stopped, crashed, …).
    pub turns_other_end: u64,
    /// Idle agents (between turns) whose run the host's death interrupted.
    pub idle_runs_interrupted: u64,
    /// Partial last lines seen on disk while a host ran (a write under way, or a tail torn by a
    /// kill that no writer has cut yet).
    pub partial_tails_seen: u64,
}

/// One session as the soak knows it.
pub(crate) struct SessionLog {
    pub id: String,
    /// Every event received, in seq order: `received[i]` has seq `i + 1`.
    pub received: Vec<Value>,
    /// The transcript's bytes verified so far (complete lines only).
    verified: Vec<u8>,
    /// Where each verified line starts in `verified` (line `i` has seq `i + 1`).
    line_starts: Vec<usize>,
    /// The status of the last `statusChanged`.
    pub status: String,
    /// A turn began (`userText`) and has not ended.
    pub open_turn: bool,
    /// A prompt was sent and its turn has not begun: when.
    pub prompt_sent: Option<Instant>,
    /// When the open turn began (its `userText`), unix ms.
    turn_began_ms: i64,
    /// The last run ended interrupted and no turn began since.
    pub interrupted: bool,
    /// The open turn began after an interruption.
    resuming: bool,
    /// Replaying from seq 1: the next seq expected.
    replay_next: Option<u64>,
}

impl SessionLog {
    pub fn new(id: String) -> Self {
        SessionLog {
            id,
            received: Vec::new(),
            verified: Vec::new(),
            line_starts: Vec::new(),
            status: "idle".into(),
            open_turn: false,
            prompt_sent: Some(Instant::now()),
            turn_began_ms: 0,
            interrupted: false,
            resuming: false,
            replay_next: None,
        }
    }

    /// The turn is over and no prompt is on its way: the session may get a follow-up.
    pub fn wants_prompt(&self) -> bool {
        !self.open_turn
            && self.prompt_sent.is_none()
            && matches!(self.status.as_str(), "awaiting-input" | "finished" | "error" | "idle")
    }

    /// The host was killed: a prompt whose turn had not begun may be lost with it (it never
    /// became an event).
    pub fn on_kill(&mut self) {
        self.prompt_sent = None;
    }

    /// A replay from seq 1 has not yet come back to the cursor.
    pub fn replaying(&self) -> bool {
        self.replay_next.is_some()
    }

    /// The next seq to subscribe from (the client's cursor).
    pub fn cursor(&self) -> u64 {
        self.received.len() as u64 + 1
    }

    /// Subscribing from seq 1 again: the events up to the cursor must come back unchanged.
    pub fn start_replay(&mut self) {
        if !self.received.is_empty() {
            self.replay_next = Some(1);
        }
    }

    /// Records one event the client received; problems go to `violations`. `kills_ms`: when
    /// the host was killed so far (unix ms).
    pub fn on_event(
        &mut self,
        event: Value,
        kills_ms: &[i64],
        tally: &mut Tally,
        violations: &mut Vec<String>,
    ) {
        let Some(seq) = event["seq"].as_u64() else {
            violations.push(format!("session {}: an event without seq: {event}", self.id));
            return;
        };
        if let Some(next) = self.replay_next {
            if seq != next {
                violations.push(format!(
                    "session {}: replay from 1 sent seq {seq} where {next} was due",
                    self.id
                ));
            }
            match self.received.get(seq.wrapping_sub(1) as usize) {
                Some(kept) => {
                    if kept != &event {
                        violations.push(format!(
                            "session {}: replayed seq {seq} differs from the one received live:\n  live:   {kept}\n  replay: {event}",
                            self.id
                        ));
                    }
                    tally.replayed_checked += 1;
                    self.replay_next =
                        (seq < self.received.len() as u64).then_some(seq.saturating_add(1));
                    return;
                }
                None => self.replay_next = None,
            }
        }
        if seq != self.cursor() {
            violations.push(format!(
                "session {}: received seq {seq} after seq {} ({})",
                self.id,
                self.received.len(),
                if seq <= self.received.len() as u64 { "a duplicate" } else { "a gap" }
            ));
            return;
        }
        if let Some(&start) = self.line_starts.get(seq as usize - 1) {
            self.compare_with_line(seq, start, &event, tally, violations);
        }
        self.track_turns(&event, kills_ms, tally);
        self.received.push(event);
    }

    fn track_turns(&mut self, event: &Value, kills_ms: &[i64], tally: &mut Tally) {
        let kind = &event["kind"];
        let at_ms = event["at"]
            .as_str()
            .and_then(|at| nucleic_protocol::Timestamp::parse(at).ok())
            .map_or(0, nucleic_protocol::Timestamp::unix_millis);
        match kind["type"].as_str().unwrap_or_default() {
            "userText" if kind["isPartial"] != true => {
                tally.turns_started += 1;
                self.open_turn = true;
                self.turn_began_ms = at_ms;
                self.prompt_sent = None;
                self.resuming = self.interrupted;
                self.interrupted = false;
            }
            "turnCompleted" if self.open_turn => {
                tally.turns_completed += 1;
                let began = self.turn_began_ms;
                let survived = kills_ms.iter().any(|k| (began..at_ms).contains(k));
                tally.turns_survived_kill += u64::from(survived);
                tally.turns_resumed += u64::from(self.resuming);
                self.open_turn = false;
            }
            "runFinished" => {
                let interrupted = kind["outcome"] == "interrupted";
                match (self.open_turn, interrupted) {
                    (true, true) => tally.turns_interrupted += 1,
                    (true, false) => tally.turns_other_end += 1,
                    (false, true) => tally.idle_runs_interrupted += 1,
                    (false, false) => {}
                }
                self.interrupted = interrupted;
                self.open_turn = false;
            }
            "statusChanged" => {
                self.status = kind["status"].as_str().unwrap_or_default().to_owned();
            }
            _ => {}
        }
    }

    fn compare_with_line(
        &self,
        seq: u64,
        start: usize,
        event: &Value,
        tally: &mut Tally,
        violations: &mut Vec<String>,
    ) {
        let end = self.line_starts.get(seq as usize).copied().unwrap_or(self.verified.len());
        let line = &self.verified[start..end - 1];
        match serde_json::from_slice::<Value>(line) {
            Ok(on_disk) if &on_disk == event => tally.events_checked += 1,
            Ok(on_disk) => violations.push(format!(
                "session {}: seq {seq} as received differs from the transcript:\n  received: {event}\n  on disk:  {on_disk}",
                self.id
            )),
            Err(e) => violations.push(format!("session {}: line {seq}: {e}", self.id)),
        }
    }

    /// Checks the transcript on disk: the prefix verified before is unchanged, every new
    /// complete line is an `Event` whose seq is its line number, every event received is there
    /// unchanged. `host_stopped`: no writer is running, so a partial last line is a torn tail.
    pub fn check_disk(
        &mut self,
        sessions_dir: &Path,
        host_stopped: bool,
        tally: &mut Tally,
        violations: &mut Vec<String>,
    ) {
        let path = sessions_dir.join(&self.id).join("transcript.jsonl");
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                violations.push(format!(
                    "session {}: cannot read {}: {e}",
                    self.id,
                    path.display()
                ));
                return;
            }
        };
        if !bytes.starts_with(&self.verified) {
            let at = bytes.iter().zip(&self.verified).take_while(|(a, b)| a == b).count();
            violations.push(format!(
                "session {}: the verified transcript changed: {} bytes verified, now {} bytes, first difference at byte {at}",
                self.id,
                self.verified.len(),
                bytes.len()
            ));
            return;
        }
        let mut offset = self.verified.len();
        while let Some(len) = bytes[offset..].iter().position(|b| *b == b'\n') {
            let line = &bytes[offset..offset + len];
            let seq = self.line_starts.len() as u64 + 1;
            if let Err(problem) = check_line(line, seq) {
                violations.push(format!(
                    "session {}: transcript line {seq}: {problem}: {}",
                    self.id,
                    String::from_utf8_lossy(&line[..line.len().min(300)])
                ));
                return;
            }
            self.line_starts.push(self.verified.len());
            self.verified.extend_from_slice(&bytes[offset..=offset + len]);
            offset += len + 1;
            if let Some(event) = self.received.get(seq as usize - 1) {
                let start = self.line_starts[seq as usize - 1];
                self.compare_with_line(seq, start, event, tally, violations);
            }
        }
        if offset < bytes.len() {
            tally.partial_tails_seen += 1;
            if host_stopped {
                violations.push(format!(
                    "session {}: the stopped host left a torn tail of {} bytes",
                    self.id,
                    bytes.len() - offset
                ));
            }
        }
        if self.received.len() > self.line_starts.len() {
            violations.push(format!(
                "session {}: acknowledged events lost: the client received seq 1..={}, the transcript holds 1..={}",
                self.id,
                self.received.len(),
                self.line_starts.len()
            ));
        }
    }

    /// Lines of the transcript verified so far.
    pub fn verified_lines(&self) -> usize {
        self.line_starts.len()
    }
}

/// One complete transcript line: an `Event` with the expected seq.
fn check_line(line: &[u8], seq: u64) -> Result<(), String> {
    let value: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON ({e})"))?;
    serde_json::from_value::<nucleic_protocol::Event>(value.clone())
        .map_err(|e| format!("not an event ({e})"))?;
    match value["seq"].as_u64() {
        Some(s) if s == seq => Ok(()),
        Some(s) if s < seq => Err(format!("seq {s} again (a duplicate; expected {seq})")),
        Some(s) => Err(format!("seq {s} (a gap; expected {seq})")),
        None => Err("no seq".into()),
    }
}
