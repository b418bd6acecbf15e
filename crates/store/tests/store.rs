//! Component tests of the transcript store on real files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use nucleic_protocol::{Backend, Event, EventKind, TextBlock, Timestamp};
use nucleic_store::{StoreError, TranscriptWriter, read_transcript};

fn ev(seq: u64, text: &str) -> Event {
    Event {
        seq,
        at: Timestamp::from_unix_millis(1_700_000_000_000 + seq as i64),
        session_id: "s".into(),
        backend: Backend::Simulated,
        native_type: Some("assistant".into()),
        origin: None,
        kind: EventKind::AssistantText(TextBlock {
            is_partial: false,
            message_id: "m".into(),
            text: text.into(),
        }),
    }
}

#[test]
fn appends_and_reads_from_any_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s/transcript.jsonl");
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    w.append(&[ev(1, "a"), ev(2, "b")]).unwrap();
    w.append(&[ev(3, "c")]).unwrap();
    let all = read_transcript(&path, 1).unwrap();
    assert_eq!(all.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
    let tail = read_transcript(&path, 3).unwrap();
    assert_eq!(tail.events.len(), 1);
    assert_eq!(read_transcript(&path, 4).unwrap().events.len(), 0);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dmode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(dmode, 0o700);
}

#[test]
fn the_lines_of_an_append_can_be_taken_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    w.append(&[ev(1, "a")]).unwrap();
    w.append(&[ev(2, "b"), ev(3, "c")]).unwrap();
    let lines = w.take_last_lines();
    let file = std::fs::read(&path).unwrap();
    let first_line = file.iter().position(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(lines.bytes, file[first_line..], "exactly the bytes of the last append");
    let second = &lines.bytes[..lines.ends[0]];
    assert_eq!(second, format!("{}\n", serde_json::to_string(&ev(2, "b")).unwrap()).as_bytes());
    assert_eq!(lines.ends, vec![second.len(), lines.bytes.len()]);
    assert!(w.take_last_lines().ends.is_empty(), "taken once");
    assert!(w.append(&[ev(9, "gap")]).is_err());
    assert!(w.take_last_lines().bytes.is_empty(), "nothing after a failed append");
}

#[test]
fn refuses_gaps_and_duplicates_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    w.append(&[ev(1, "a")]).unwrap();
    assert!(matches!(w.append(&[ev(3, "x")]), Err(StoreError::SeqGap { last: 1, got: 3, .. })));
    assert!(matches!(w.append(&[ev(2, "ok"), ev(2, "dup")]), Err(StoreError::SeqGap { .. })));
    assert_eq!(read_transcript(&path, 1).unwrap().last_seq, 1);
}

#[test]
fn torn_last_line_is_ignored_by_readers_and_truncated_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    {
        let mut w = TranscriptWriter::open(&path).unwrap().writer;
        w.append(&[ev(1, "a"), ev(2, "b")]).unwrap();
    }
    let torn = r#"{"seq":3,"at":"2026-01-01T00:00:00Z","sessionID":"s","backe"#;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(torn.as_bytes())
        .unwrap();

    let read = read_transcript(&path, 1).unwrap();
    assert!(read.torn_tail);
    assert_eq!(read.events.len(), 2);

    let opened = TranscriptWriter::open(&path).unwrap();
    assert_eq!(opened.truncated_bytes, torn.len() as u64);
    let mut w = opened.writer;
    assert_eq!(w.last_seq(), 2);
    w.append(&[ev(3, "c")]).unwrap();
    let read = read_transcript(&path, 1).unwrap();
    assert!(!read.torn_tail);
    assert_eq!(read.events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
}

#[test]
fn a_corrupt_middle_line_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    w.append(&[ev(1, "a")]).unwrap();
    drop(w);
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"not json\n").unwrap();
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    w.append(&[ev(2, "b")]).unwrap();
    let read = read_transcript(&path, 1).unwrap();
    assert_eq!(read.events.len(), 2);
    assert_eq!(read.skipped.len(), 1);
    assert_eq!(read.skipped[0].line, 2);
}

#[test]
fn missing_file_reads_empty() {
    let dir = tempfile::tempdir().unwrap();
    let read = read_transcript(&dir.path().join("nope.jsonl"), 1).unwrap();
    assert!(read.events.is_empty());
    assert_eq!(read.last_seq, 0);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Cutting the file at any byte leaves a readable prefix with gapless seq from 1.
        #[test]
        fn any_truncation_leaves_a_gapless_prefix(n in 1usize..20, cut_frac in 0.0f64..1.0) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.jsonl");
            let mut w = TranscriptWriter::open(&path).unwrap().writer;
            let events: Vec<Event> = (1..=n as u64).map(|i| ev(i, "x")).collect();
            w.append(&events).unwrap();
            drop(w);
            let len = std::fs::metadata(&path).unwrap().len();
            let cut = (len as f64 * cut_frac) as u64;
            std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(cut).unwrap();
            let mut w = TranscriptWriter::open(&path).unwrap().writer;
            let next = w.last_seq() + 1;
            w.append(&[ev(next, "after")]).unwrap();
            let read = read_transcript(&path, 1).unwrap();
            let seqs: Vec<u64> = read.events.iter().map(|e| e.seq).collect();
            prop_assert_eq!(seqs, (1..=next).collect::<Vec<u64>>());
            prop_assert!(read.skipped.is_empty());
        }
    }
}

#[test]
fn the_index_lets_readers_start_near_any_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut w = TranscriptWriter::open(&path).unwrap().writer;
    let events: Vec<Event> = (1..=1000).map(|i| ev(i, "x")).collect();
    for chunk in events.chunks(7) {
        w.append(chunk).unwrap();
    }
    let index = w.index();
    for from in [1u64, 255, 256, 257, 700, 1000] {
        let offset = index.read().unwrap().offset_before(from);
        let got = nucleic_store::read_range(&path, offset, from, 10).unwrap();
        assert_eq!(got.events[0].seq, from);
        assert!(got.events.len() <= 10);
    }
    drop(w);
    // Reopening rebuilds the same index from the file.
    let reopened = TranscriptWriter::open(&path).unwrap().writer;
    assert_eq!(*reopened.index().read().unwrap(), *index.read().unwrap());
}
