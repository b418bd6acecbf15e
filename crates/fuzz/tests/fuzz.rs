#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

//! The short fuzz campaign CI runs: a few thousand mutated inputs per target, each checked for
//! panics and the parser's contract (`docs/robustness.md` has the million-input command).

use nucleic_fuzz::{Harness, Target, run_campaign};

/// Mutated inputs per target here: seconds in a debug build.
const CI_INPUTS: u64 = 1_500;

fn campaign(target: Target) {
    let harness = Harness::new(target).expect("harness");
    assert!(!harness.seed_inputs().is_empty(), "{} has no seeds", target.name());
    let report = run_campaign(&harness, 0xC1, CI_INPUTS);
    assert!(report.inputs >= CI_INPUTS);
    let findings: Vec<String> = report
        .findings
        .iter()
        .map(|f| {
            let input: Vec<String> =
                f.input.parts.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
            format!("{}{}\n  input: {input:?}", if f.panicked { "PANIC " } else { "" }, f.message)
        })
        .collect();
    assert!(
        report.clean(),
        "{}: {} panics, {} violations:\n{}",
        target.name(),
        report.panics,
        report.violations,
        findings.join("\n")
    );
}

#[test]
fn claude_lines() {
    campaign(Target::ClaudeLines);
}

#[test]
fn app_server_json_rpc_lines() {
    campaign(Target::CodexAppServer);
}

#[test]
fn exec_json_lines() {
    campaign(Target::CodexExec);
}

#[test]
fn client_frames() {
    campaign(Target::ClientFrames);
}

#[test]
fn transcript() {
    campaign(Target::Transcript);
}

#[test]
fn import_claude() {
    campaign(Target::ImportClaude);
}

#[test]
fn import_codex() {
    campaign(Target::ImportCodex);
}

#[test]
fn import_nucleic() {
    campaign(Target::ImportNucleic);
}
