//! The hidden entry points the host starts its own executable with — `__confine` (the first
//! process of a sandbox), `__keeper DIR` (the keeper of one agent), `__sim-agent ARGS…` (the
//! simulated agent) — dispatched before anything else, by any binary that hosts agents.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

pub use crate::isolation::CONFINE_ENTRY;

/// The first argument that makes a process an agent's keeper (its spool directory follows).
pub const KEEPER_ENTRY: &str = "__keeper";
/// The first argument that makes a process the simulated agent (its arguments follow).
pub const SIM_AGENT_ENTRY: &str = "__sim-agent";

/// Runs the entry point this process was started for, when its first argument names one;
/// `None` for any other command line (the binary goes on with its own parsing).
pub fn run_if_asked() -> Option<ExitCode> {
    if let Some(code) = crate::confine::run_if_asked() {
        return Some(code);
    }
    let mut args = std::env::args_os().skip(1);
    let entry = args.next()?;
    if entry == KEEPER_ENTRY {
        return Some(run_keeper(args.collect()));
    }
    if entry == SIM_AGENT_ENTRY {
        let args = args.map(|a| a.to_string_lossy().into_owned()).collect();
        return Some(ExitCode::from(u8::try_from(nucleic_sim::run_cli(args)).unwrap_or(1)));
    }
    None
}

fn run_keeper(args: Vec<OsString>) -> ExitCode {
    let [dir] = args.as_slice() else {
        eprintln!("nucleic {KEEPER_ENTRY}: expected one argument, the keeper's directory");
        return ExitCode::from(2);
    };
    match crate::keeper::run_keeper(Path::new(dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nucleic keeper: {e}");
            ExitCode::FAILURE
        }
    }
}
