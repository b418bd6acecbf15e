//! Every link of the documents resolves: `docs/*.md`, `README.md`, `CONTRIBUTING.md` — the file
//! (relative to the document) exists and a `#fragment` names a heading of it (GitHub's anchors);
//! and every repository path they name in code spans (`crates/…`, `docs/…`, …) exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The documents whose links are checked.
fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.extend(["README.md", "CONTRIBUTING.md"].map(|f| root.join(f)));
    docs.sort();
    docs
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of `[text](target)` links.
fn links(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("").to_owned();
        out.push(target);
        rest = &rest[end..];
    }
    out
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a document's headings make (a repeated one gets `-1`, `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#');
        let base = anchor(&heading.replace('`', ""));
        let mut name = base.clone();
        let mut n = 0;
        while !seen.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
    }
    seen
}

fn broken_links_of(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let mut broken = Vec::new();
    for target in links(&text) {
        if target.is_empty()
            || target.contains("://")
            || target.starts_with("mailto:")
            || target.starts_with('<')
        {
            continue;
        }
        let (file, fragment) = match target.split_once('#') {
            Some((file, fragment)) => (file, Some(fragment)),
            None => (target.as_str(), None),
        };
        let path =
            if file.is_empty() { doc.to_path_buf() } else { doc.parent().unwrap().join(file) };
        if !path.exists() {
            broken.push(format!("{}: {target}: no such file", doc.display()));
            continue;
        }
        if let Some(fragment) = fragment
            && path.extension().is_some_and(|e| e == "md")
            && !anchors(&std::fs::read_to_string(&path).unwrap()).contains(fragment)
        {
            broken.push(format!("{}: {target}: no such heading", doc.display()));
        }
    }
    broken
}

/// Top-level folders whose paths, named in a code span, must exist (`web/dist` is built).
const REPOSITORY_FOLDERS: &[&str] =
    &["crates/", "docs/", "web/", "scripts/", "examples/", ".ci/", "relay/"];

/// Repository paths named in code spans that do not exist (globs and placeholders skipped).
fn missing_paths_of(doc: &Path, root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let mut missing = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 0
            || span.contains(char::is_whitespace)
            || !REPOSITORY_FOLDERS.iter().any(|f| span.starts_with(f))
            || span.starts_with("web/dist")
            || span.contains(['*', '<', '>', '{', '}', '$', '…'])
        {
            continue;
        }
        let path = span.split([':', '#']).next().unwrap_or(span).trim_end_matches(['.', ',', ';']);
        if !root.join(path).exists() {
            missing.push(format!("{}: `{span}`: no such path", doc.display()));
        }
    }
    missing
}

#[test]
fn every_repository_path_the_documents_name_exists() {
    let root = repo();
    let missing: Vec<String> =
        documents().iter().flat_map(|d| missing_paths_of(d, &root)).collect();
    assert!(missing.is_empty(), "the documents name paths that are gone:\n{}", missing.join("\n"));
}

#[test]
fn every_link_of_the_documents_resolves() {
    let broken: Vec<String> = documents().iter().flat_map(|d| broken_links_of(d)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_docs_index_lists_every_document() {
    let index = std::fs::read_to_string(repo().join("docs/README.md")).unwrap();
    let listed: BTreeSet<String> = links(&index).into_iter().collect();
    for doc in std::fs::read_dir(repo().join("docs")).unwrap() {
        let name = doc.unwrap().file_name().to_string_lossy().into_owned();
        if name == "README.md" || name == "screenshots" {
            continue;
        }
        assert!(listed.contains(&name), "docs/README.md does not list {name}");
    }
}

#[test]
fn a_broken_link_and_a_missing_heading_are_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.md"), "# The `b` page\n\n## Two words\n").unwrap();
    let a = dir.path().join("a.md");
    std::fs::write(
        &a,
        "[ok](b.md) [ok](b.md#two-words) [ok](b.md#the-b-page) [web](https://x.invalid/y)\n\
         `[code](nowhere.md)` [gone](gone.md) [bad](b.md#three)\n",
    )
    .unwrap();
    let broken = broken_links_of(&a);
    assert_eq!(broken.len(), 2, "{broken:?}");
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/b.md"), "").unwrap();
    std::fs::write(&a, "`docs/b.md` `docs/b.md:3` `docs/*.md` `docs/gone.md`").unwrap();
    let missing = missing_paths_of(&a, dir.path());
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing[0].ends_with("`docs/gone.md`: no such path"));
    assert!(broken[0].ends_with("gone.md: no such file") && broken[1].ends_with("no such heading"));
}
