//! Words whose value is only known at run time, in a position where it decides what happens.
//!
//! A dynamic word (a variable, a substitution, an unresolved brace or tilde form, an argument
//! `xargs` or `find -exec` appends) anywhere but a data position makes the line not understood:
//! the policy cannot tell which path is read or written, which option is given, what runs.

use crate::command::{Analysis, Invocation};
use crate::data::data_positions;
use crate::shell::RedirectKind;

/// Why the line's words are not pinned down (empty when they all are).
pub fn unpinned(analysis: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for invocation in &analysis.invocations {
        if let Some(why) = unpinned_invocation(invocation)
            && !out.contains(&why)
        {
            out.push(why);
        }
    }
    out
}

fn unpinned_invocation(invocation: &Invocation) -> Option<String> {
    let name = invocation.name();
    if invocation.runs_script {
        return None;
    }
    let anything_dynamic = invocation.dynamic
        || invocation.appended_args
        || invocation.wrapper_args.iter().any(|w| w.dynamic)
        || invocation.redirects.iter().any(|r| r.target.dynamic);
    if !anything_dynamic {
        return None;
    }
    let data = data_positions(invocation);
    for (i, word) in invocation.program.iter().enumerate().skip(1) {
        let is_data = data.get(i).copied().unwrap_or(false);
        if word.dynamic && (word.unquoted_expansion || !is_data) {
            return Some(format!(
                "`{name}` gets {}, whose value is only known at run time",
                shown(&word.raw, &word.text)
            ));
        }
    }
    if let Some(word) = invocation.wrapper_args.iter().find(|w| w.dynamic) {
        return Some(format!(
            "an option of `{}` is {}, only known at run time",
            invocation.wrappers.join(" "),
            shown(&word.raw, &word.text)
        ));
    }
    if invocation.appended_args && !name.is_empty() && !matches!(name, "echo" | "printf") {
        return Some(format!("`{name}` gets its arguments from file names or input at run time"));
    }
    let redirect = invocation
        .redirects
        .iter()
        .find(|r| matches!(r.kind, RedirectKind::Read | RedirectKind::Write) && r.target.dynamic);
    redirect.map(|r| {
        format!(
            "a redirection to {} is only known at run time",
            shown(&r.target.raw, &r.target.text)
        )
    })
}

fn shown(raw: &str, text: &str) -> String {
    let source = if raw.is_empty() { text } else { raw };
    let short: String = source.chars().take(60).collect();
    if short.is_empty() { "a run-time value".to_owned() } else { format!("`{short}`") }
}
