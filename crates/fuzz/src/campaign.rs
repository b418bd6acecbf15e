//! Running a target over N generated inputs: panics caught per input, invariant failures and
//! panics reported with the input that caused them.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use crate::mutate::Rng;
use crate::targets::{Harness, Input, Target};

/// How many findings a report keeps (the rest are only counted).
const KEPT_FINDINGS: usize = 20;

/// One input that panicked or broke an invariant.
#[derive(Debug, Clone)]
pub struct Finding {
    pub input: Input,
    pub panicked: bool,
    pub message: String,
}

/// What a campaign ran and found.
#[derive(Debug)]
pub struct Report {
    pub target: Target,
    /// Mutated inputs checked (for decoders: mutated lines, fed within whole sessions).
    pub inputs: u64,
    /// Parser calls made (decoders also decode the unmutated lines around mutated ones).
    pub calls: u64,
    pub elapsed: Duration,
    pub panics: u64,
    pub violations: u64,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn inputs_per_sec(&self) -> f64 {
        self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn clean(&self) -> bool {
        self.panics == 0 && self.violations == 0
    }
}

/// Checks the seeds, then generated inputs until `min_inputs` mutated inputs were checked.
pub fn run_campaign(harness: &Harness, seed: u64, min_inputs: u64) -> Report {
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let mut report = Report {
        target: harness.target(),
        inputs: 0,
        calls: 0,
        elapsed: Duration::ZERO,
        panics: 0,
        violations: 0,
        findings: Vec::new(),
    };
    let record = |report: &mut Report, input: &Input| {
        report.calls += input.parts.len() as u64;
        let finding = match catch_unwind(AssertUnwindSafe(|| harness.check(input))) {
            Ok(Ok(())) => return,
            Ok(Err(message)) => {
                report.violations += 1;
                Finding { input: input.clone(), panicked: false, message }
            }
            Err(payload) => {
                report.panics += 1;
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                Finding { input: input.clone(), panicked: true, message }
            }
        };
        if report.findings.len() < KEPT_FINDINGS {
            report.findings.push(finding);
        }
    };
    for input in harness.seed_inputs() {
        record(&mut report, &input);
    }
    while report.inputs < min_inputs {
        let input = harness.generate(&mut rng);
        report.inputs += input.mutated as u64;
        record(&mut report, &input);
    }
    report.elapsed = started.elapsed();
    report
}
