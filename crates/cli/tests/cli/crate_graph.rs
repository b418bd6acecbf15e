//! The crate graph in `docs/architecture.md` is generated from `cargo metadata` (workspace
//! crates and their dependencies on each other); this test fails when it drifts.
//! `NUCLEIC_UPDATE_DOCS=1 cargo test -p nucleic-cli --test cli crate_graph` rewrites it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BEGIN: &str = "<!-- crate-graph: generated from `cargo metadata`; \
    NUCLEIC_UPDATE_DOCS=1 cargo test -p nucleic-cli --test cli crate_graph rewrites it -->";
const END: &str = "<!-- /crate-graph -->";

/// Workspace crate (short name) → (normal and build deps, dev-only deps), workspace-internal.
type Graph = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

fn workspace_graph(root: &Path) -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let short = |name: &str| name.strip_prefix("nucleic-").unwrap_or(name).to_owned();
    let members: BTreeSet<String> =
        packages.iter().filter_map(|p| p["name"].as_str()).map(str::to_owned).collect();
    let mut graph = Graph::new();
    for p in packages {
        let (mut normal, mut dev) = (BTreeSet::new(), BTreeSet::new());
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let name = d["name"].as_str().unwrap_or_default();
            if !members.contains(name) {
                continue;
            }
            match d["kind"].as_str() {
                Some("dev") => dev.insert(short(name)),
                _ => normal.insert(short(name)),
            };
        }
        dev.retain(|d| !normal.contains(d));
        graph.insert(short(p["name"].as_str().unwrap_or_default()), (normal, dev));
    }
    graph
}

/// Crates in dependency order (a crate after everything it depends on), then by name.
fn ordered(graph: &Graph) -> Vec<String> {
    let mut done: Vec<String> = Vec::new();
    while done.len() < graph.len() {
        let next = graph
            .iter()
            .find(|(name, (deps, _))| !done.contains(name) && deps.iter().all(|d| done.contains(d)))
            .map(|(name, _)| name.clone())
            .expect("the workspace crate graph has no cycle");
        done.push(next);
    }
    done
}

fn render(graph: &Graph) -> String {
    let width = graph.keys().map(String::len).max().unwrap_or(0);
    let mut out = format!("{BEGIN}\n```text\n");
    for name in ordered(graph) {
        let (deps, dev) = &graph[&name];
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        let mut line = format!(
            "{name:<width$} → {}",
            if deps.is_empty() { "—".to_owned() } else { deps.join(", ") }
        );
        if !dev.is_empty() {
            let dev: Vec<&str> = dev.iter().map(String::as_str).collect();
            line.push_str(&format!("   (tests: {})", dev.join(", ")));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n");
    out.push_str(END);
    out
}

#[test]
fn crate_graph_in_architecture_md_matches_cargo_metadata() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc_path = root.join("docs/architecture.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/architecture.md");
    let expected = render(&workspace_graph(&root));
    let (Some(start), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("docs/architecture.md has no generated crate-graph block ({BEGIN} … {END})");
    };
    let current = &doc[start..end + END.len()];
    if current == expected {
        return;
    }
    if std::env::var_os("NUCLEIC_UPDATE_DOCS").is_some() {
        let updated = format!("{}{expected}{}", &doc[..start], &doc[end + END.len()..]);
        std::fs::write(&doc_path, updated).expect("rewrite docs/architecture.md");
        return;
    }
    panic!(
        "the crate graph in docs/architecture.md is out of date; run \
         `NUCLEIC_UPDATE_DOCS=1 cargo test -p nucleic-cli --test cli crate_graph` and commit it.\n\
         expected:\n{expected}\nfound:\n{current}"
    );
}

/// Crates that talk to the host through `client` yet still link it: `cli` runs the daemon
/// (`serve`, `demo`) and the host's own tests, until those move out (issue 26, item 4).
const FRONT_ENDS_HOSTING_THE_DAEMON: &[&str] = &["cli"];

#[test]
fn front_ends_reach_the_host_only_through_the_client_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let graph = workspace_graph(&root);
    let (client, _) = graph.get("client").expect("a client crate");
    // `channel` is the device side's pure crypto, `http` outbound dialling (a relay, TLS).
    let allowed = ["protocol", "channel", "http"];
    assert!(
        client.iter().all(|d| allowed.contains(&d.as_str())),
        "client may depend on protocol, channel and http only, not {client:?}"
    );
    for (name, (deps, _)) in &graph {
        if !deps.contains("client") || FRONT_ENDS_HOSTING_THE_DAEMON.contains(&name.as_str()) {
            continue;
        }
        for inner in ["host", "core", "agents"] {
            assert!(!deps.contains(inner), "front end {name} depends on {inner}: use client");
        }
    }
}

#[test]
fn render_orders_crates_after_their_dependencies() {
    let mut graph = Graph::new();
    let set = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    graph.insert("a".into(), (set(&["b"]), set(&["t"])));
    graph.insert("b".into(), (set(&[]), set(&[])));
    graph.insert("t".into(), (set(&["b"]), set(&[])));
    let text = render(&graph);
    let body: Vec<&str> = text.lines().skip(2).take(3).collect();
    assert_eq!(body, ["b → —", "a → b   (tests: t)", "t → b"]);
}

/// The enums whose variants name a backend (or a backend's launch or handle).
const BACKEND_ENUMS: &[&str] = &["Backend", "AgentLaunch", "AnyAgent", "AgentKind"];

/// Crates allowed to match on them: `agents` holds each backend's description
/// (`nucleic_agents::backend`), `protocol` defines `Backend` (its wire names).
const BACKEND_OWNERS: &[&str] = &["agents", "protocol"];

/// Where `line` matches on a backend variant: the variant in a match arm's pattern (before `=>`),
/// compared with `==` / `!=`, or tested with `let` / `matches!`.
fn backend_match(line: &str) -> Option<&str> {
    for name in BACKEND_ENUMS {
        let needle = format!("{name}::");
        for (at, _) in line.match_indices(&needle) {
            let before = &line[..at];
            if before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue; // `AgentBackend::`, not ours
            }
            let rest = &line[at + needle.len()..];
            let variant: &str = &rest
                [..rest.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(rest.len())];
            let is_variant = variant.starts_with(|c: char| c.is_ascii_uppercase())
                && variant.chars().any(|c| c.is_ascii_lowercase());
            if !is_variant {
                continue;
            }
            // The path before the enum (`nucleic_protocol::`), then what precedes it.
            let before = before
                .trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                .trim_end();
            let arm = line[at..].contains("=>") && !before.contains("=>");
            let compared = ["==", "!=", "let", "matches!("].iter().any(|op| before.ends_with(op))
                || before.contains("matches!(");
            if arm || compared {
                return Some(variant);
            }
        }
    }
    None
}

/// The lines of a source file outside its `#[cfg(test)]` part.
fn non_test_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().take_while(|(_, l)| l.trim() != "#[cfg(test)]")
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("source dir is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path.file_stem().is_some_and(|s| s.to_string_lossy().ends_with("tests"))
        {
            out.push(path);
        }
    }
}

/// What one backend is lives in `crates/agents` (`nucleic_agents::backend`): no other crate's
/// code matches on backend variants (tests may name them).
#[test]
fn only_agents_matches_on_backend_variants() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&crates).expect("crates/ is readable").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if BACKEND_OWNERS.contains(&name.as_str()) || !entry.path().join("src").is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&entry.path().join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source is readable");
            for (n, line) in non_test_lines(&text) {
                if let Some(variant) = backend_match(line) {
                    let shown = file.strip_prefix(&crates).unwrap_or(&file).display().to_string();
                    found.push(format!("crates/{shown}:{}: {variant}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "only crates/agents may match on backend variants (put it in the backend's description, \
         nucleic_agents::backend):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_backend_match_scan_sees_arms_comparisons_and_tests() {
    for line in [
        "Backend::Codex => \"codex resume\",",
        "Backend::ClaudeCode | Backend::Simulated => x,",
        "(Some(_), nucleic_protocol::Backend::Codex) => note,",
        "if backend == Backend::Simulated {",
        "x != nucleic_protocol::Backend::Simulated",
        "AgentLaunch::Claude(o) => (o.cwd.clone(), o.program.clone()),",
        "if let AnyAgent::Codex(h) = agent {",
        "matches!(b, Backend::Codex)",
        "crate::AgentKind::Claude => Backend::ClaudeCode,",
    ] {
        assert!(backend_match(line).is_some(), "{line}");
    }
    for line in [
        "backend: Backend::Simulated,",
        "meta.backend = Some(Backend::Codex);",
        "let x = describe(Backend::ClaudeCode);",
        "Some(kind) => Backend::ALL.iter(),",
        "AgentBackend::Claude => 1,",
    ] {
        assert_eq!(backend_match(line), None, "{line}");
    }
}
