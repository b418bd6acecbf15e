//! Property: a compound command is never allowed more than its strictest part.

use nucleic_policy::{Behaviour, Behaviour::*, Mode};
use proptest::prelude::*;

use crate::support::{bash, policy};

const PARTS: &[&str] = &[
    "git status",
    "ls -la",
    "npm run test",
    "cargo test --all",
    "rm -rf ~",
    "sudo id",
    "curl https://x",
    "echo hi",
    "touch f",
    "$(echo sudo) x",
    "git push -f",
    "cat ~/.ssh/id_rsa",
    "frobnicate",
    "rm x",
    "npm install x",
    "cat README.md",
    "echo x > out.txt",
    "s{u,}do id",
];
const JOINERS: &[&str] = &["; ", " && ", " || ", " | ", "\n", " & "];

fn rank(b: Behaviour) -> u8 {
    match b {
        Allow => 0,
        Ask => 1,
        Deny => 2,
    }
}

fn wrap(kind: u8, inner: &str) -> String {
    match kind {
        0 => inner.to_owned(),
        1 => format!("({inner})"),
        2 => format!("echo $({inner})"),
        3 => format!("bash -c '{}'", inner.replace('\'', r"'\''")),
        _ => format!("{{ {inner}; }}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn compound_never_widens(
        picks in proptest::collection::vec((0..PARTS.len(), 0..JOINERS.len()), 1..5),
        wrapping in 0u8..5,
        mode in prop_oneof![Just(Mode::Readonly), Just(Mode::Edit), Just(Mode::Full)],
    ) {
        let p = policy(&[
            (Allow, "Bash(git status)"), (Allow, "Bash(npm run test:*)"), (Allow, "Bash(cargo test:*)"),
            (Allow, "Bash(echo:*)"), (Allow, "Bash(touch:*)"), (Ask, "Bash(curl:*)"), (Deny, "Bash(rm x)"),
        ]);
        let mut line = String::new();
        let mut strictest = Allow;
        for (i, (part, joiner)) in picks.iter().enumerate() {
            if i > 0 {
                line.push_str(JOINERS[*joiner]);
            }
            line.push_str(PARTS[*part]);
            let alone = bash(&p, mode, PARTS[*part]).behaviour;
            if rank(alone) > rank(strictest) {
                strictest = alone;
            }
        }
        let line = wrap(wrapping, &line);
        let whole = bash(&p, mode, &line).behaviour;
        prop_assert!(rank(whole) >= rank(strictest), "{line:?}: whole {whole:?}, strictest part {strictest:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    /// Arbitrary shell-like text: no panic, and never allowed when it names `sudo` as a command.
    #[test]
    fn arbitrary_lines_never_panic(line in "[a-z$(){}`'\"\\|&;<> \n*?~/.=-]{0,80}") {
        let d = bash(&crate::support::permissive(), Mode::Full, &line);
        prop_assert!(!d.by.is_empty());
        let with_sudo = format!("{line}\n\nsudo id");
        let d = bash(&crate::support::permissive(), Mode::Full, &with_sudo);
        prop_assert_ne!(d.behaviour, Allow, "{:?}", with_sudo);
    }
}
