//! The host's parts keep their dependency rules (`docs/architecture.md`, "The host's parts"):
//! no module but `lib.rs` names `host.rs`; worktrees, policy and devices never reach into
//! sessions' control, the dev loop or finishing; only the agents part names backend variants;
//! and no import circle between the host's files. Read from the `crate::` / `super::` paths of
//! each file's non-test code, and from the calls a part makes on the shared `Context`: every part
//! adds methods to it (`impl Context`), so a call `self.record(…)` reaches the part that defines
//! `record` without importing it — the rules count such a call like an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Parts that must not import what the second list names.
const FORBIDDEN: &[(&[&str], &[&str])] =
    &[(&["worktrees", "policy", "devices"], &["sessions::control", "dev_loop", "finishing"])];

/// The backend variants only the agents part may name.
const VARIANTS: &[&str] = &[
    "Backend::ClaudeCode",
    "Backend::Codex",
    "Backend::Gemini",
    "Backend::OpenCode",
    "Backend::Qwen",
    "Backend::Simulated",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir` (not `src/bin`, other crates), as a path relative to `src/`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable").flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("bin") {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(src()).expect("under src").to_path_buf());
        }
    }
}

/// The code of a file before its unit tests, comment lines left out.
fn code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end].lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The module path of `file` (`worktrees/pool.rs` -> `worktrees::pool`).
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        file.with_extension("").iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// Module paths a file names: `crate::a::b::C`, `crate::{a::b, c}`, `super::x::y`.
fn named(file: &Path, code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let here = module_of(file);
    let parent: Vec<String> = if file.ends_with("mod.rs") {
        here
    } else {
        here.split_last().map(|(_, up)| up.to_vec()).unwrap_or_default()
    };
    let bytes = code.as_bytes();
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent)] {
        let mut at = 0;
        while let Some(found) = code[at..].find(prefix) {
            let start = at + found;
            at = start + prefix.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let rest = &code[at..];
            let tails: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                let close = group.find('}').unwrap_or(group.len());
                group[..close].split(',').map(|s| s.trim().to_owned()).collect()
            } else {
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(rest.len());
                vec![rest[..end].to_owned()]
            };
            for tail in tails {
                let mut path = base.clone();
                path.extend(tail.split("::").filter(|s| !s.is_empty()).map(str::to_owned));
                out.insert(path.join("::"));
            }
        }
    }
    out
}

/// The file a module path names: its longest prefix that is a file of `src/`.
fn file_of(path: &str, known: &BTreeSet<PathBuf>) -> Option<PathBuf> {
    let segments: Vec<&str> = path.split("::").collect();
    (1..=segments.len()).rev().find_map(|n| {
        let stem = segments[..n].join("/");
        [PathBuf::from(format!("{stem}.rs")), PathBuf::from(format!("{stem}/mod.rs"))]
            .into_iter()
            .find(|f| known.contains(f))
    })
}

struct Scan {
    /// File -> the module paths its code names.
    names: BTreeMap<PathBuf, BTreeSet<String>>,
    /// File -> its code.
    code: BTreeMap<PathBuf, String>,
}

/// The bodies of a file's `impl Context { … }` blocks (each up to its closing `}` at the line
/// start).
fn context_blocks(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find("impl Context {") {
        let start = at + found;
        let at_line_start = start == 0 || code.as_bytes()[start - 1] == b'\n';
        let end = code[start..].find("\n}").map_or(code.len(), |e| start + e);
        if at_line_start {
            out.push(&code[start..end]);
        }
        at = end.max(start + 1);
    }
    out
}

/// The methods a block defines (`fn name`, at the block's indentation).
fn defined_methods(block: &str) -> Vec<String> {
    block
        .lines()
        .filter(|l| l.starts_with("    ") && !l.starts_with("     "))
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l);
            let rest = rest.strip_prefix("async ").unwrap_or(rest);
            let name = rest.strip_prefix("fn ")?;
            let end = name.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            Some(name[..end].to_owned())
        })
        .collect()
}

/// The Context methods a block calls (`self.name(`).
fn called_methods(block: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(found) = block[at..].find("self.") {
        let start = at + found + "self.".len();
        at = start;
        let rest = &block[start..];
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(0);
        if end > 0 && rest[end..].starts_with('(') {
            out.insert(rest[..end].to_owned());
        }
    }
    out
}

/// Method -> the module that defines it on the Context (an inherent method's name is unique).
fn context_methods(scan: &Scan) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (file, code) in &scan.code {
        for block in context_blocks(code) {
            for name in defined_methods(block) {
                out.insert(name, module_of(file).join("::"));
            }
        }
    }
    out
}

fn scan() -> Scan {
    let mut list = Vec::new();
    files(&src(), &mut list);
    let mut names = BTreeMap::new();
    let mut codes = BTreeMap::new();
    for file in list {
        let text = std::fs::read_to_string(src().join(&file)).expect("source is readable");
        let code = code(&text);
        names.insert(file.clone(), named(&file, &code));
        codes.insert(file, code);
    }
    Scan { names, code: codes }
}

/// The part a file belongs to (its folder), `None` for the shared files at the top.
fn part_of(file: &Path) -> Option<String> {
    let mut parts = file.iter();
    let first = parts.next()?.to_string_lossy().into_owned();
    parts.next().map(|_| first)
}

/// What breaks a rule, one line per import (or call through the Context).
fn broken(scan: &Scan) -> Vec<String> {
    let mut found = Vec::new();
    let methods = context_methods(scan);
    for (file, code) in &scan.code {
        let Some(part) = part_of(file) else { continue };
        for (parts, forbidden) in FORBIDDEN {
            if !parts.contains(&part.as_str()) {
                continue;
            }
            for block in context_blocks(code) {
                for call in called_methods(block) {
                    let Some(owner) = methods.get(&call) else { continue };
                    if forbidden.iter().any(|f| owner == f || owner.starts_with(&format!("{f}::")))
                    {
                        found.push(format!(
                            "{}: the {part} part calls `self.{call}` of `crate::{owner}` through the Context",
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    for (file, names) in &scan.names {
        let part = part_of(file);
        let shown = file.display();
        for name in names {
            if file != Path::new("lib.rs") && (name == "host" || name.starts_with("host::")) {
                found.push(format!("{shown}: names host.rs (`crate::{name}`): take the Context"));
            }
            if name == "Host" {
                found.push(format!("{shown}: names `crate::Host`: take the Context"));
            }
            for (parts, forbidden) in FORBIDDEN {
                let Some(part) = &part else { continue };
                if !parts.contains(&part.as_str()) {
                    continue;
                }
                for f in *forbidden {
                    if name == f || name.starts_with(&format!("{f}::")) {
                        found.push(format!("{shown}: the {part} part imports `crate::{name}`"));
                    }
                }
            }
        }
        if part.as_deref() != Some("agents") {
            for variant in VARIANTS {
                if scan.code[file].contains(variant) {
                    found.push(format!("{shown}: names {variant} (only the agents part may)"));
                }
            }
        }
    }
    found
}

/// The files on an import circle, if any (depth-first, one circle shown).
fn circle(scan: &Scan) -> Option<Vec<PathBuf>> {
    let known: BTreeSet<PathBuf> = scan.names.keys().cloned().collect();
    let edges: BTreeMap<&PathBuf, BTreeSet<PathBuf>> = scan
        .names
        .iter()
        .map(|(file, names)| {
            let to = names.iter().filter_map(|n| file_of(n, &known)).filter(|t| t != file);
            // A folder's mod.rs declares its children: that is not an import.
            (file, to.filter(|t| !t.ends_with("mod.rs")).collect())
        })
        .collect();
    fn visit<'a>(
        at: &'a PathBuf,
        edges: &'a BTreeMap<&'a PathBuf, BTreeSet<PathBuf>>,
        path: &mut Vec<&'a PathBuf>,
        done: &mut BTreeSet<&'a PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        if let Some(i) = path.iter().position(|p| *p == at) {
            return Some(path[i..].iter().map(|p| (*p).clone()).collect());
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        for next in edges.get(at).into_iter().flatten() {
            let next = edges.keys().find(|k| **k == next).copied()?;
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|start| visit(start, &edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_parts_keep_their_dependency_rules() {
    let scan = scan();
    assert!(scan.names.len() > 40, "the scan found the host's files");
    let found = broken(&scan);
    assert!(found.is_empty(), "the host's parts break their rules:\n{}", found.join("\n"));
}

#[test]
fn no_import_circle_between_the_hosts_files() {
    let scan = scan();
    if let Some(files) = circle(&scan) {
        let shown: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        panic!("an import circle: {}", shown.join(" -> "));
    }
}

#[test]
fn the_scan_sees_what_it_forbids() {
    let file = Path::new("worktrees/pool.rs");
    let code =
        "use crate::host::Host;\nuse crate::{dev_loop::checks, config};\nuse super::tend::X;";
    let names = named(file, code);
    assert!(names.contains("host::Host"), "{names:?}");
    assert!(names.contains("dev_loop::checks"), "{names:?}");
    assert!(names.contains("config"), "{names:?}");
    assert!(names.contains("worktrees::tend::X"), "{names:?}");
    let scan = Scan {
        names: BTreeMap::from([(file.to_path_buf(), names)]),
        code: BTreeMap::from([(file.to_path_buf(), format!("{code}\nBackend::Codex"))]),
    };
    let found = broken(&scan);
    assert_eq!(found.len(), 3, "{found:?}");
}

#[test]
fn the_scan_sees_calls_through_the_context() {
    let control = Path::new("sessions/control.rs");
    let disk = Path::new("worktrees/disk.rs");
    let control_code = "impl Context {\n    pub(crate) async fn record(&self) {}\n    fn helper() {\n        inner();\n    }\n}\n";
    let disk_code = "impl Context {\n    pub async fn reclaim(&self) {\n        self.record().await;\n        self.pools.take();\n        self.reclaim_log(1);\n    }\n}\n";
    let scan = Scan {
        names: BTreeMap::from([
            (control.to_path_buf(), BTreeSet::new()),
            (disk.to_path_buf(), BTreeSet::new()),
        ]),
        code: BTreeMap::from([
            (control.to_path_buf(), control_code.to_owned()),
            (disk.to_path_buf(), disk_code.to_owned()),
        ]),
    };
    let methods = context_methods(&scan);
    assert_eq!(methods.get("record").map(String::as_str), Some("sessions::control"));
    assert_eq!(methods.get("helper").map(String::as_str), Some("sessions::control"));
    assert!(!methods.contains_key("inner"), "{methods:?}");
    let found = broken(&scan);
    assert_eq!(
        found,
        [
            "worktrees/disk.rs: the worktrees part calls `self.record` of `crate::sessions::control` through the Context"
        ]
    );
}
