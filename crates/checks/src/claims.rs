//! What a model says it did, read from its prose: "all tests pass", "fixed", "I changed one
//! file". Pure. Each claim keeps the sentence it came from, so a report can quote it.

/// What a claim is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// The tests (or the build) pass.
    TestsPass,
    /// The problem is fixed / resolved / works now.
    Fixed,
    /// It changed this many files.
    FilesChanged(u64),
}

/// A claim and the sentence it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub kind: ClaimKind,
    pub quote: String,
}

/// Phrases that claim the tests pass.
const TESTS_PASS: &[&str] = &[
    "all tests pass",
    "tests pass",
    "tests are passing",
    "tests now pass",
    "test passes",
    "test now passes",
    "tests succeed",
    "all green",
    "build passes",
    "everything passes",
];

/// Phrases that claim a fix.
const FIXED: &[&str] =
    &["fixed", "i fixed", "is resolved", "resolved the", "now works", "works now", "the fix"];

/// Words that turn a sentence's claim around ("tests still fail", "not fixed").
const NEGATIONS: &[&str] =
    &["not ", "n't ", "still fail", " fails", " fail ", "unable", "no longer pass"];

/// Number words a model uses for small counts.
const NUMBERS: &[(&str, u64)] = &[
    ("one", 1),
    ("a single", 1),
    ("a", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
];

/// Verbs that make "N files" a claim about changes.
const CHANGE_VERBS: &[&str] = &["changed", "modified", "edited", "touched", "updated"];

/// Every claim in `text`, sentence by sentence, at most one of each kind per sentence.
pub fn claims_in(text: &str) -> Vec<Claim> {
    let mut out = Vec::new();
    for sentence in sentences(text) {
        let lower = format!(" {} ", sentence.to_lowercase());
        let negated = NEGATIONS.iter().any(|n| lower.contains(n));
        let quote = sentence.to_owned();
        if TESTS_PASS.iter().any(|p| lower.contains(p)) && !negated {
            out.push(Claim { kind: ClaimKind::TestsPass, quote: quote.clone() });
        }
        if FIXED.iter().any(|p| lower.contains(p))
            && !lower.contains("not ")
            && !lower.contains("n't ")
        {
            out.push(Claim { kind: ClaimKind::Fixed, quote: quote.clone() });
        }
        if let Some(n) = files_changed(&lower) {
            out.push(Claim { kind: ClaimKind::FilesChanged(n), quote });
        }
    }
    out
}

/// Sentences of `text`: split at `.`, `!`, `?` followed by space or end, and at newlines.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let end = match b {
            b'\n' => true,
            b'.' | b'!' | b'?' => bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()),
            _ => false,
        };
        if end {
            let s = text[start..=i].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = i + 1;
        }
    }
    let s = text[start..].trim();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// "changed one file", "modified 3 files", "edited a single file" → the count.
fn files_changed(lower: &str) -> Option<u64> {
    let verb_at = CHANGE_VERBS.iter().filter_map(|v| lower.find(v).map(|i| i + v.len())).min()?;
    let rest = &lower[verb_at..];
    let file_at = rest.find(" file")?;
    // The words between the verb and "file(s)": "only one", "3", "a single", "just the one".
    let between = rest[..file_at].trim();
    let between =
        between.strip_prefix("only ").or_else(|| between.strip_prefix("just ")).unwrap_or(between);
    if let Ok(n) = between.parse::<u64>() {
        return Some(n);
    }
    NUMBERS.iter().find(|(word, _)| between == *word).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<ClaimKind> {
        claims_in(text).into_iter().map(|c| c.kind).collect()
    }

    #[test]
    fn passing_tests_and_fixes_are_claims_with_their_sentence() {
        let claims = claims_in("I edited the parser. All tests pass now!\nDone.");
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0].kind, ClaimKind::TestsPass);
        assert_eq!(claims[0].quote, "All tests pass now!");
        assert_eq!(kinds("Fixed the off-by-one."), vec![ClaimKind::Fixed]);
    }

    #[test]
    fn negated_sentences_claim_nothing() {
        assert!(kinds("The tests still fail on CI.").is_empty());
        assert!(kinds("This is not fixed yet.").is_empty());
        assert!(kinds("Tests don't pass yet.").is_empty());
    }

    #[test]
    fn file_counts_in_words_or_digits() {
        assert_eq!(kinds("I changed one file."), vec![ClaimKind::FilesChanged(1)]);
        assert_eq!(kinds("Modified 3 files in src."), vec![ClaimKind::FilesChanged(3)]);
        assert_eq!(kinds("I only touched a single file"), vec![ClaimKind::FilesChanged(1)]);
        assert!(kinds("I read the file.").is_empty());
    }
}
