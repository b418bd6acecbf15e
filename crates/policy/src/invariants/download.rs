//! The `curl-pipe-shell` invariant: downloaded code is never run.

use super::{Violation, violation};
use crate::code::{INTERPRETERS, SHELLS};
use crate::command::{Analysis, Invocation, basename};
use crate::shell::RedirectKind;

/// Programs that download.
pub(crate) const DOWNLOADERS: &[&str] = &[
    "curl", "wget", "wget2", "fetch", "aria2c", "http", "https", "xh", "xhs", "curlie", "axel",
    "lftp", "lynx", "w3m", "links", "httpie",
];
/// Programs that run a script they are given (besides shells and interpreters).
const RUNNERS: &[&str] = &["source", ".", "eval"];

fn runs_scripts(name: &str) -> bool {
    SHELLS.contains(&name) || INTERPRETERS.contains(&name) || RUNNERS.contains(&name)
}

/// Files a downloader writes: `(names, name chosen by the server)`.
pub(crate) fn download_outputs(invocation: &Invocation) -> (Vec<String>, bool) {
    let name = invocation.name();
    let mut outputs: Vec<String> = invocation
        .redirects
        .iter()
        .filter(|r| r.kind == RedirectKind::Write)
        .map(|r| r.target.text.clone())
        .collect();
    let args: Vec<&str> = invocation.args().collect();
    let (output_short, remote_short, output_long): (char, Option<char>, &[&str]) = match name {
        "curl" | "curlie" => {
            ('o', Some('O'), &["--output", "--remote-name", "--remote-name-all", "--output-dir"])
        }
        "wget" | "wget2" => ('O', None, &["--output-document", "--directory-prefix"]),
        _ => ('o', None, &["--output", "--download"]),
    };
    let mut unknown_name = matches!(name, "wget" | "wget2" | "aria2c" | "axel" | "lftp");
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            let (option, value) = long.split_once('=').map_or((long, None), |(o, v)| (o, Some(v)));
            let option = format!("--{option}");
            if output_long.contains(&option.as_str()) {
                if option.starts_with("--remote-name")
                    || option == "--output-dir"
                    || option == "--directory-prefix"
                {
                    unknown_name = true;
                    continue;
                }
                let value =
                    value.map(str::to_owned).or_else(|| args.get(i).map(|v| (*v).to_owned()));
                if value.is_some() && !a.contains('=') {
                    i += 1;
                }
                unknown_name = false;
                outputs.extend(value.filter(|v| v != "-"));
            }
            continue;
        }
        let Some(cluster) = a.strip_prefix('-') else { continue };
        for (at, flag) in cluster.char_indices() {
            if Some(flag) == remote_short {
                unknown_name = true;
            }
            if flag == output_short {
                let rest = &cluster[at + 1..];
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).map(|v| (*v).to_owned())
                } else {
                    Some(rest.to_owned())
                };
                unknown_name = false;
                outputs.extend(value.filter(|v| v != "-"));
                break;
            }
        }
    }
    (outputs, unknown_name)
}

/// `curl -o x.sh … && sh x.sh`, `wget … && ./install.sh`: a file downloaded earlier in the line
/// is run (or any file, when the download's name is chosen by the server).
pub(super) fn downloaded_then_run(analysis: &Analysis) -> Option<Violation> {
    let mut outputs: Vec<String> = Vec::new();
    let mut unknown_name = false;
    let mut downloaded = false;
    for invocation in &analysis.invocations {
        let name = invocation.name();
        if DOWNLOADERS.contains(&name) {
            downloaded = true;
            let (names, unknown) = download_outputs(invocation);
            outputs.extend(names.iter().map(|n| basename(n).to_owned()));
            unknown_name |= unknown;
            continue;
        }
        if !downloaded {
            continue;
        }
        let executed = if runs_scripts(name) {
            invocation.args().find(|a| !a.starts_with('-')).map(basename)
        } else {
            invocation.program.first().filter(|w| w.text.contains('/')).map(|w| basename(&w.text))
        };
        if let Some(file) = executed
            && (unknown_name || outputs.iter().any(|o| o == file))
        {
            return Some(violation(
                "curl-pipe-shell",
                format!("Running a downloaded file ({file}) is never allowed for agents."),
            ));
        }
    }
    None
}

/// `curl … | sh`, `bash <(curl …)`, `sh -c "$(curl …)"`.
pub(super) fn curl_pipe_shell(invocation: &Invocation, analysis: &Analysis) -> Option<Violation> {
    let name = invocation.name();
    if !runs_scripts(name) {
        return None;
    }
    let downloaded = |i: &Invocation| DOWNLOADERS.contains(&i.name());
    let fed_by_pipe = invocation.stage > 0
        && reads_program_from_stdin(invocation)
        && analysis.invocations.iter().any(|other| {
            other.pipeline == invocation.pipeline
                && other.stage < invocation.stage
                && downloaded(other)
        });
    let fed_by_substitution = invocation
        .substitutions
        .iter()
        .filter_map(|&i| analysis.invocations.get(i))
        .any(downloaded);
    (fed_by_pipe || fed_by_substitution).then(|| {
        violation(
            "curl-pipe-shell",
            format!("Running downloaded code (`… | {name}`) is never allowed for agents."),
        )
    })
}

fn reads_program_from_stdin(invocation: &Invocation) -> bool {
    let args: Vec<&str> = invocation.args().collect();
    if args.iter().any(|a| matches!(*a, "-c" | "-e" | "-m" | "-E" | "--eval")) {
        return false;
    }
    args.iter().all(|a| a.starts_with('-') || a.starts_with('+'))
        || args.iter().any(|a| *a == "-" || *a == "/dev/stdin")
}
