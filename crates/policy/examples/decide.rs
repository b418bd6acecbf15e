//! Prints the decision for command lines: `cargo run -p nucleic-policy --example decide -- \
//! [--mode readonly|edit|full] [--allow RULE]… [--deny RULE]… [--ask RULE]… COMMAND…`.
//! The session is a fixed layout (worktree `/repo/wt`, home `/home/u`); no file is touched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use nucleic_policy::{Behaviour, Context, MapResolver, Mode, Policy, Scope};
use serde_json::json;

fn main() {
    let mut policy = Policy::new();
    let mut mode = Mode::Edit;
    let mut commands = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let behaviour = match arg.as_str() {
            "--mode" => {
                mode = Mode::parse(&args.next().expect("a mode")).expect("readonly, edit or full");
                continue;
            }
            "--allow" => Behaviour::Allow,
            "--deny" => Behaviour::Deny,
            "--ask" => Behaviour::Ask,
            _ => {
                commands.push(arg);
                continue;
            }
        };
        policy
            .add_rule(Scope::Session, behaviour, &args.next().expect("a rule"))
            .expect("a valid rule");
    }
    let resolver = MapResolver::new();
    let ctx = Context {
        project_root: PathBuf::from("/repo"),
        worktree: PathBuf::from("/repo/wt"),
        cwd: PathBuf::from("/repo/wt"),
        home: PathBuf::from("/home/u"),
        data_dir: PathBuf::from("/home/u/.local/share/nucleic"),
        extra_write_roots: Vec::new(),
        read_roots: Vec::new(),
        mode,
        resolver: &resolver,
    };
    for command in commands {
        let d = policy.evaluate("Bash", &json!({ "command": command }), &ctx);
        println!(
            "{:<5} {:<32} {:?} {:<8} {command:?}\n      {}",
            d.behaviour, d.by, d.risk, "", d.reason
        );
    }
}
