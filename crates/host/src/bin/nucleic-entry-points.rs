//! The host's hidden entry points alone (`__confine`, `__keeper`, `__sim-agent`): what the
//! host's own tests and benches start as "the nucleic executable", without the CLI.

use std::process::ExitCode;

fn main() -> ExitCode {
    nucleic_agents::entry_points::run_if_asked().unwrap_or_else(|| {
        eprintln!("nucleic-entry-points: expected __confine, __keeper or __sim-agent first");
        ExitCode::from(2)
    })
}
