//! `nucleic-fuzz`: runs the mutation campaign of one or every target and prints inputs/sec and
//! findings; exits 1 if any input panicked or broke an invariant.
//!
//! `cargo run --release -p nucleic-fuzz -- [--target NAME]... [--inputs N] [--seed S]`

use std::process::ExitCode;

use nucleic_fuzz::{Harness, TARGETS, Target, run_campaign};

const USAGE: &str = "usage: nucleic-fuzz [--target NAME]... [--inputs N] [--seed S]";

fn main() -> ExitCode {
    let mut targets = Vec::new();
    let mut inputs: u64 = 1_000_000;
    let mut seed: u64 = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        let parsed = match (arg.as_str(), value.as_deref()) {
            ("--target", Some(name)) => Target::from_name(name).map(|t| targets.push(t)),
            ("--inputs", Some(n)) => n.replace('_', "").parse().ok().map(|n| inputs = n),
            ("--seed", Some(n)) => n.parse().ok().map(|n| seed = n),
            _ => None,
        };
        if parsed.is_none() {
            let names: Vec<_> = TARGETS.iter().map(|t| t.name()).collect();
            eprintln!("{USAGE}\nbad argument {arg} {value:?}; targets: {}", names.join(", "));
            return ExitCode::from(2);
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    // Panics are caught and reported per input; the default hook would print each one.
    std::panic::set_hook(Box::new(|_| {}));
    let mut clean = true;
    println!(
        "{:<18} {:>10} {:>11} {:>9} {:>12} {:>7} {:>10}",
        "target", "inputs", "calls", "secs", "inputs/sec", "panics", "violations"
    );
    for target in targets {
        let harness = match Harness::new(target) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("{}: cannot set up: {e}", target.name());
                return ExitCode::from(2);
            }
        };
        let report = run_campaign(&harness, seed, inputs);
        println!(
            "{:<18} {:>10} {:>11} {:>9.1} {:>12.0} {:>7} {:>10}",
            target.name(),
            report.inputs,
            report.calls,
            report.elapsed.as_secs_f64(),
            report.inputs_per_sec(),
            report.panics,
            report.violations
        );
        for f in &report.findings {
            let kind = if f.panicked { "PANIC" } else { "VIOLATION" };
            let parts: Vec<String> = f
                .input
                .parts
                .iter()
                .map(|p| String::from_utf8_lossy(p).chars().take(400).collect())
                .collect();
            println!("  {kind}: {}\n    input: {parts:?}", f.message);
        }
        clean &= report.clean();
    }
    if clean { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
