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
    /// Approvals asked (`approvalRequested`).
    pub approvals_requested: u64,
    /// …answered by the soak (`approvalResolved` other than `cancelled`).
    pub approvals_answered: u64,
    /// …voided by the host (`cancelled`: the turn ended, the host restarted).
    pub approvals_voided: u64,
    /// Answers refused as `alreadyResolved` (voided meanwhile).
    pub answers_refused: u64,
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
    /// Approvals asked and not yet resolved: request id, when it arrived, whether the soak
    /// answered it already.
    pub open_approvals: Vec<(String, Instant, bool)>,
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
            open_approvals: Vec::new(),
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
            "approvalRequested" => {
                tally.approvals_requested += 1;
                let id = kind["requestID"].as_str().unwrap_or_default().to_owned();
                self.open_approvals.push((id, Instant::now(), false));
            }
            "approvalResolved" => {
                if kind["decision"] == "cancelled" {
                    tally.approvals_voided += 1;
                } else {
                    tally.approvals_answered += 1;
                }
                self.open_approvals.retain(|(id, ..)| kind["requestID"] != id.as_str());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: Value) -> Value {
        json_event(seq, "2026-12-01T18:00:00.000Z", kind)
    }

    fn json_event(seq: u64, at: &str, kind: Value) -> Value {
        serde_json::json!({"seq": seq, "at": at, "sessionID": "s1", "backend": "simulated", "kind": kind})
    }

    fn text(seq: u64, t: &str) -> Value {
        event(seq, serde_json::json!({"type": "stderr", "text": t}))
    }

    /// A session log and its transcript directory holding `events` (one per line) + `tail`.
    fn setup(events: &[Value], tail: &str) -> (tempfile::TempDir, SessionLog) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("s1")).unwrap();
        write(dir.path(), events, tail);
        (dir, SessionLog::new("s1".into()))
    }

    fn write(dir: &Path, events: &[Value], tail: &str) {
        let mut text: String = events.iter().map(|e| format!("{e}\n")).collect();
        text.push_str(tail);
        std::fs::write(dir.join("s1/transcript.jsonl"), text).unwrap();
    }

    fn receive(log: &mut SessionLog, events: &[Value]) -> Vec<String> {
        let mut violations = Vec::new();
        for e in events {
            log.on_event(e.clone(), &[], &mut Tally::default(), &mut violations);
        }
        violations
    }

    fn check(log: &mut SessionLog, dir: &Path, stopped: bool) -> Vec<String> {
        let mut violations = Vec::new();
        log.check_disk(dir, stopped, &mut Tally::default(), &mut violations);
        violations
    }

    #[test]
    fn a_transcript_holding_what_was_received_passes() {
        let events: Vec<Value> = (1..=3).map(|s| text(s, "x")).collect();
        let (dir, mut log) = setup(&events, "{\"seq\":4,");
        assert!(receive(&mut log, &events).is_empty());
        assert!(check(&mut log, dir.path(), false).is_empty(), "a write under way is no fault");
        assert_eq!(log.verified_lines(), 3);
    }

    #[test]
    fn a_lost_acknowledged_event_is_a_violation() {
        let events: Vec<Value> = (1..=3).map(|s| text(s, "x")).collect();
        let (dir, mut log) = setup(&events[..2], "");
        receive(&mut log, &events);
        let v = check(&mut log, dir.path(), false);
        assert!(v[0].contains("acknowledged events lost"), "{v:?}");
    }

    #[test]
    fn a_changed_event_is_a_violation_whichever_comes_first() {
        let events: Vec<Value> = (1..=2).map(|s| text(s, "x")).collect();
        let changed = [text(1, "x"), text(2, "y")];
        // Received first, then read from disk.
        let (dir, mut log) = setup(&changed, "");
        receive(&mut log, &events);
        let v = check(&mut log, dir.path(), false);
        assert!(v[0].contains("seq 2 as received differs"), "{v:?}");
        // Read from disk first, then received.
        let (dir, mut log) = setup(&changed, "");
        assert!(check(&mut log, dir.path(), false).is_empty());
        let v = receive(&mut log, &events);
        assert!(v[0].contains("seq 2 as received differs"), "{v:?}");
    }

    #[test]
    fn gaps_duplicates_and_corrupt_lines_on_disk_are_violations() {
        for (lines, tail, want) in [
            (vec![text(1, "x"), text(3, "x")], "", "a gap"),
            (vec![text(1, "x"), text(1, "x")], "", "a duplicate"),
            (vec![text(1, "x")], "{not json\n", "not JSON"),
            (vec![text(1, "x")], "{\"seq\":2}\n", "not an event"),
        ] {
            let (dir, mut log) = setup(&lines, tail);
            let v = check(&mut log, dir.path(), false);
            assert!(v.len() == 1 && v[0].contains(want), "{want}: {v:?}");
        }
    }

    #[test]
    fn a_rewritten_prefix_and_a_torn_tail_after_a_stop_are_violations() {
        let events: Vec<Value> = (1..=2).map(|s| text(s, "x")).collect();
        let (dir, mut log) = setup(&events, "");
        assert!(check(&mut log, dir.path(), false).is_empty());
        write(dir.path(), &[text(1, "x"), text(2, "z")], "");
        let v = check(&mut log, dir.path(), false);
        assert!(v[0].contains("verified transcript changed"), "{v:?}");
        let (dir, mut log) = setup(&events, "{\"seq\":3");
        let v = check(&mut log, dir.path(), true);
        assert!(v[0].contains("torn tail of 8 bytes"), "{v:?}");
    }

    #[test]
    fn delivery_gaps_duplicates_and_replay_differences_are_violations() {
        let (_dir, mut log) = setup(&[], "");
        let v = receive(&mut log, &[text(1, "x"), text(3, "x"), text(1, "x")]);
        assert!(v[0].contains("a gap") && v[1].contains("a duplicate"), "{v:?}");
        log.start_replay();
        assert!(log.replaying());
        let v = receive(&mut log, &[text(1, "other")]);
        assert!(v[0].contains("replayed seq 1 differs"), "{v:?}");
        assert!(!log.replaying(), "the replay reached the cursor");
    }

    #[test]
    fn turns_are_told_apart() {
        let (_dir, mut log) = setup(&[], "");
        let mut tally = Tally::default();
        let mut violations = Vec::new();
        let user = serde_json::json!({"type": "userText", "isPartial": false, "messageID": "u", "text": "stream 3"});
        let done = serde_json::json!({"type": "turnCompleted", "stopReason": "end_turn"});
        let interrupted = serde_json::json!({"type": "runFinished", "outcome": "interrupted"});
        let kill_ms =
            nucleic_protocol::Timestamp::parse("2026-12-01T18:00:01.000Z").unwrap().unix_millis();
        let events = [
            json_event(1, "2026-12-01T18:00:00.000Z", user.clone()),
            json_event(2, "2026-12-01T18:00:02.000Z", done.clone()),
            json_event(3, "2026-12-01T18:00:03.000Z", user.clone()),
            json_event(4, "2026-12-01T18:00:04.000Z", interrupted),
            json_event(5, "2026-12-01T18:00:05.000Z", user),
            json_event(6, "2026-12-01T18:00:06.000Z", done),
        ];
        for e in events {
            log.on_event(e, &[kill_ms], &mut tally, &mut violations);
        }
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(
            (tally.turns_started, tally.turns_completed, tally.turns_survived_kill),
            (3, 2, 1)
        );
        assert_eq!((tally.turns_interrupted, tally.turns_resumed), (1, 1));
    }
}
