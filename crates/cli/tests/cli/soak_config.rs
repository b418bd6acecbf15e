//! What a soak is asked to do (sessions, kills, seed), its seeded generator, and its report.

use std::time::{Duration, SystemTime};

use crate::soak_ledger::Tally;

/// What one soak does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SoakConfig {
    pub sessions: usize,
    pub kills: usize,
    pub seed: u64,
    /// Longest stretch the sessions stream between a restart and the next kill.
    pub max_run: Duration,
    /// How long the last restart may take to let every turn finish.
    pub finish_deadline: Duration,
    /// Self-test: after this kill (0-based), cut a transcript before the last event received.
    pub cut_after_kill: Option<usize>,
}

impl SoakConfig {
    /// The defaults, overridden by `NUCLEIC_SOAK_SESSIONS`, `_KILLS`, `_SEED`, `_MAX_RUN_MS`.
    pub fn from_env(sessions: usize, kills: usize, max_run: Duration) -> Self {
        fn var(name: &str) -> Option<u64> {
            let text = std::env::var(name).ok()?;
            Some(text.trim().parse().unwrap_or_else(|e| panic!("{name}={text:?}: {e}")))
        }
        let clock = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        SoakConfig {
            sessions: var("NUCLEIC_SOAK_SESSIONS").map_or(sessions, |n| n as usize),
            kills: var("NUCLEIC_SOAK_KILLS").map_or(kills, |n| n as usize),
            seed: var("NUCLEIC_SOAK_SEED").unwrap_or(clock.as_nanos() as u64 % 1_000_000_007),
            max_run: var("NUCLEIC_SOAK_MAX_RUN_MS").map_or(max_run, Duration::from_millis),
            finish_deadline: Duration::from_secs(180),
            cut_after_kill: None,
        }
    }
}

/// A seeded xorshift64* generator: the same seed, the same kill moments and prompts.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
    pub fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

/// What a soak found.
pub(crate) struct SoakReport {
    pub config: SoakConfig,
    pub took: Duration,
    pub kills: usize,
    pub early_kills: usize,
    pub tally: Tally,
    pub transcript_lines: usize,
    pub leftover_processes: usize,
    /// What the restarted hosts' recovery said it did, summed over `daemon.log`: sessions
    /// interrupted, orphan agents stopped, torn tails cut, catalog rows caught up.
    pub recovered: [u64; 4],
    pub violations: Vec<String>,
}

impl std::fmt::Display for SoakReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        let t = &self.tally;
        writeln!(f, "soak: seed {} · {} sessions · {} kills", c.seed, c.sessions, c.kills)?;
        writeln!(
            f,
            "  took {:.0} s; {} kills done ({} while the host was starting or recovering)",
            self.took.as_secs_f64(),
            self.kills,
            self.early_kills
        )?;
        writeln!(
            f,
            "  events: {} received and checked against the transcript, {} replayed from seq 1 and checked; {} transcript lines verified",
            t.events_checked, t.replayed_checked, self.transcript_lines
        )?;
        writeln!(
            f,
            "  turns: {} started, {} completed ({} across a kill, {} resumed after an interruption), {} interrupted, {} ended otherwise; {} idle runs interrupted",
            t.turns_started,
            t.turns_completed,
            t.turns_survived_kill,
            t.turns_resumed,
            t.turns_interrupted,
            t.turns_other_end,
            t.idle_runs_interrupted
        )?;
        writeln!(
            f,
            "  partial last lines seen while a host ran: {}; processes left in the worktrees after the final stop: {}",
            t.partial_tails_seen, self.leftover_processes
        )?;
        writeln!(
            f,
            "  approvals: {} asked, {} allowed, {} voided by the host; {} answers refused as already resolved",
            t.approvals_requested, t.approvals_answered, t.approvals_voided, t.answers_refused
        )?;
        let [interrupted, orphans, torn, rows] = self.recovered;
        writeln!(
            f,
            "  recovery (daemon log): {interrupted} sessions interrupted, {orphans} orphan agents stopped, {torn} torn tails cut, {rows} catalog rows caught up"
        )?;
        writeln!(f, "  violations: {}", self.violations.len())?;
        for v in self.violations.iter().take(50) {
            writeln!(f, "  - {v}")?;
        }
        Ok(())
    }
}

/// Sums the host's `recovered: …` log lines: sessions interrupted, orphans stopped, tails cut,
/// rows caught up.
pub(crate) fn recovery_totals(log: &str) -> [u64; 4] {
    let mut totals = [0; 4];
    for line in log.lines().filter_map(|l| l.strip_prefix("nucleic: recovered: ")) {
        for part in line.split(", ") {
            let (n, what) = part.split_once(' ').unwrap_or_default();
            let slot = [
                "session(s) interrupted",
                "orphan agent(s) stopped",
                "torn transcript",
                "row(s) caught up",
            ]
            .iter()
            .position(|p| what.starts_with(p));
            if let (Some(slot), Ok(n)) = (slot, n.parse::<u64>()) {
                totals[slot] += n;
            }
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    #[test]
    fn recovery_lines_are_summed() {
        let log = "nucleic: serving on x\nnucleic: recovered: 20 session(s) interrupted, 1 orphan agent(s) stopped, 0 torn transcript tail(s) cut, 4 row(s) caught up\nnucleic: recovered: 3 session(s) interrupted, 2 orphan agent(s) stopped, 1 torn transcript tail(s) cut\n";
        assert_eq!(super::recovery_totals(log), [23, 3, 1, 4]);
    }
}
