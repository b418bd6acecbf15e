//! The labelled corpus: risk precision and recall per class, and critical calls never allowed.

use std::collections::BTreeMap;

use nucleic_policy::{Behaviour, Mode, Risk};
use serde::Deserialize;

use crate::support::{permissive, tool};

#[derive(Deserialize)]
struct Case {
    tool: String,
    input: serde_json::Value,
    risk: Risk,
}

fn cases() -> Vec<Case> {
    let text = include_str!("../corpus.jsonl");
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("corpus.jsonl line {}: {e}", i + 1))
        })
        .collect()
}

const CLASSES: [Risk; 4] = [Risk::Low, Risk::Medium, Risk::High, Risk::Critical];

#[test]
fn risk_classifier_meets_its_targets_on_the_corpus() {
    let cases = cases();
    assert!(cases.len() >= 300, "corpus has {} cases", cases.len());
    let policy = permissive();
    // (expected, predicted) → count
    let mut confusion: BTreeMap<(Risk, Risk), usize> = BTreeMap::new();
    let mut misses = Vec::new();
    for case in &cases {
        let d = tool(&policy, Mode::Full, &case.tool, case.input.clone());
        *confusion.entry((case.risk, d.risk)).or_default() += 1;
        if d.risk != case.risk {
            misses.push(format!(
                "{:?} expected {:?} got {:?} ({})",
                case.input,
                case.risk,
                d.risk,
                d.risk_reasons.join("; ")
            ));
        }
        if case.risk == Risk::Critical {
            assert_ne!(d.behaviour, Behaviour::Allow, "critical case allowed: {}", case.input);
        }
    }
    let mut table = String::from("| class | cases | precision | recall |\n|---|---|---|---|\n");
    let mut recalls = BTreeMap::new();
    for class in CLASSES {
        let tp = confusion.get(&(class, class)).copied().unwrap_or(0);
        let expected: usize =
            confusion.iter().filter(|((e, _), _)| *e == class).map(|(_, n)| n).sum();
        let predicted: usize =
            confusion.iter().filter(|((_, p), _)| *p == class).map(|(_, n)| n).sum();
        let precision = tp as f64 / predicted.max(1) as f64;
        let recall = tp as f64 / expected.max(1) as f64;
        recalls.insert(class, recall);
        table.push_str(&format!("| {class:?} | {expected} | {precision:.3} | {recall:.3} |\n"));
    }
    let correct: usize =
        CLASSES.iter().map(|c| confusion.get(&(*c, *c)).copied().unwrap_or(0)).sum();
    println!("{table}accuracy {correct}/{}\nmisses:\n{}", cases.len(), misses.join("\n"));
    assert_eq!(recalls[&Risk::Critical], 1.0, "every critical case must be classified critical");
    assert!(
        correct * 100 >= cases.len() * 90,
        "accuracy {correct}/{} below 90%:\n{}",
        cases.len(),
        misses.join("\n")
    );
}
