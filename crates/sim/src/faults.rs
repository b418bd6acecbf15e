//! Fault injection: which misbehaviours `NUCLEIC_SIM_FAULT` asks the simulated agent for.

/// The environment variable holding a comma-separated list of fault names.
pub const FAULT_ENV: &str = "NUCLEIC_SIM_FAULT";

/// The set of faults the simulated agent should inject.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    /// Exit with code 3 right after the first `assistant` line of a turn (no `result`).
    pub crash_mid_turn: bool,
    /// Emit the line `{this is not json` before each `system/init`.
    pub malformed_stdout: bool,
    /// Emit a line of an unknown type and a system line of an unknown subtype each turn.
    pub unknown_lines: bool,
    /// After `system/init`, never make progress (control requests are still answered).
    pub hang: bool,
    /// Answer every turn with a synthetic API error (`api_retry` + error assistant + result).
    pub api_error: bool,
    /// On stdin EOF, sleep forever instead of exiting.
    pub ignore_stdin_eof: bool,
    /// Answer `--resume` under a new session id (the conversation carried over, as with
    /// `--fork-session`): whoever resumed it now talks to another agent conversation.
    pub fork_on_resume: bool,
}

impl Faults {
    /// Parses a comma list such as `"crash_mid_turn, unknown_lines"`. Unknown names are
    /// returned in the second element so the caller can warn about them.
    pub fn parse(list: &str) -> (Self, Vec<String>) {
        let mut faults = Self::default();
        let mut unknown = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "crash_mid_turn" => faults.crash_mid_turn = true,
                "malformed_stdout" => faults.malformed_stdout = true,
                "unknown_lines" => faults.unknown_lines = true,
                "hang" => faults.hang = true,
                "api_error" => faults.api_error = true,
                "ignore_stdin_eof" => faults.ignore_stdin_eof = true,
                "fork_on_resume" => faults.fork_on_resume = true,
                other => unknown.push(other.to_owned()),
            }
        }
        (faults, unknown)
    }

    /// Reads [`FAULT_ENV`], warning on stderr about names it does not know.
    pub fn from_env() -> Self {
        let Ok(list) = std::env::var(FAULT_ENV) else {
            return Self::default();
        };
        let (faults, unknown) = Self::parse(&list);
        for name in unknown {
            eprintln!("nucleic-sim: ignoring unknown fault {name:?} in {FAULT_ENV}");
        }
        faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_comma_list() {
        let (f, unknown) = Faults::parse(" crash_mid_turn,api_error ,, bogus");
        assert!(f.crash_mid_turn && f.api_error);
        assert!(!f.hang && !f.unknown_lines && !f.malformed_stdout && !f.ignore_stdin_eof);
        assert_eq!(unknown, vec!["bogus".to_owned()]);
        assert_eq!(Faults::parse("").0, Faults::default());
        assert!(Faults::parse("fork_on_resume").0.fork_on_resume);
    }
}
