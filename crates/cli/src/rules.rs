//! `nucleic rules list|add|rm`: Nucleic's rule files of the host and its projects, edited in
//! place. Directly on the files rather than through the daemon: they are the source of truth
//! every session reads again at its next tool call after a change, each edit is made under the
//! file's lock and written whole (temporary file + rename), and this works with no daemon running.

use std::path::Path;
use std::process::ExitCode;

use nucleic_host::rules::{Behaviour, FileRule, RuleFile, add_rule, list_rules, remove_rule};

/// What to do with rules.
#[derive(Debug, clap::Subcommand)]
pub enum RulesCommand {
    /// The rules of the host file and of every project's (or of one project's).
    List {
        #[arg(long)]
        project: Option<String>,
    },
    /// Add a rule in Claude Code's syntax (`Bash(npm test)`, `Edit(/src/**)`, `WebFetch(domain:docs.rs)`):
    /// to the project's file with `--project`, else to the host's.
    Add {
        rule: String,
        #[arg(long)]
        project: Option<String>,
        /// A deny rule (default: allow).
        #[arg(long, conflicts_with = "ask")]
        deny: bool,
        /// An ask rule (default: allow).
        #[arg(long)]
        ask: bool,
    },
    /// Remove a rule, written exactly as listed, from the project's file or the host's.
    Rm {
        rule: String,
        #[arg(long)]
        project: Option<String>,
    },
}

fn file(project: Option<String>) -> RuleFile {
    project.map_or(RuleFile::Host, RuleFile::Project)
}

fn print(scope: &str, rules: &[FileRule]) {
    for r in rules {
        println!("{scope:<20} {:<6} {}", r.behaviour.to_string(), r.rule);
    }
}

pub fn rules(home: &Path, command: RulesCommand) -> anyhow::Result<ExitCode> {
    match command {
        RulesCommand::List { project: Some(project) } => {
            let path = RuleFile::Project(project.clone()).path(home);
            print(&format!("project:{project}"), &list_rules(&path)?);
        }
        RulesCommand::List { project: None } => {
            print("host", &list_rules(&RuleFile::Host.path(home))?);
            let mut projects: Vec<String> = std::fs::read_dir(home.join("projects"))
                .map(|dir| {
                    dir.filter_map(Result::ok)
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            projects.sort();
            for project in projects {
                let path = RuleFile::Project(project.clone()).path(home);
                print(&format!("project:{project}"), &list_rules(&path)?);
            }
        }
        RulesCommand::Add { rule, project, deny, ask } => {
            let behaviour = if deny {
                Behaviour::Deny
            } else if ask {
                Behaviour::Ask
            } else {
                Behaviour::Allow
            };
            let path = file(project).path(home);
            if !add_rule(&path, behaviour, &rule)? {
                eprintln!("nucleic: {rule} was already in {}", path.display());
            }
        }
        RulesCommand::Rm { rule, project } => {
            let path = file(project).path(home);
            if remove_rule(&path, &rule)? == 0 {
                anyhow::bail!("no rule {rule:?} in {}", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
