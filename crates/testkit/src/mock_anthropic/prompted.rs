//! Replies that depend on the request: a `Write` of the file the prompt names, in the agent's
//! working directory (read from Claude Code's system prompt), so one script serves sessions in
//! any worktree.

use serde_json::{Value, json};

use super::script::{Reply, ToolCall};

/// The file written when the prompt names none.
pub const DEFAULT_PATH: &str = "hello.txt";
/// The content written when the prompt has no "containing …".
pub const DEFAULT_CONTENT: &str = "Hello from the mock model.\n";

/// `reply` with [`Reply::WriteNamedFile`] turned into the `Write` call for this request.
pub(crate) fn resolve(reply: &Reply, body: &Value) -> Reply {
    if let Reply::Computed(computed) = reply {
        let made = (computed.0)(body);
        // A computed reply is never computed again (it could loop).
        return if matches!(made, Reply::Computed(_)) {
            Reply::Text("(computed twice)".into())
        } else {
            resolve(&made, body)
        };
    }
    if let Reply::WritePlanFile(content) = reply {
        let file_path = plan_file(body).unwrap_or_else(|| "NO-PLAN-FILE-NAMED.md".to_owned());
        return Reply::ToolUses {
            text: Some("I'll write my plan.".into()),
            calls: vec![ToolCall::new(
                "Write",
                json!({ "file_path": file_path, "content": content }),
            )],
        };
    }
    if !matches!(reply, Reply::WriteNamedFile) {
        return reply.clone();
    }
    let messages = body.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let prompt = last_prompt(messages);
    if let Some(command) = named_command(&prompt) {
        return Reply::ToolUses {
            text: Some(format!("I'll run {command}.")),
            calls: vec![ToolCall::new(
                "Bash",
                json!({ "command": command, "description": "Run the requested command" }),
            )],
        };
    }
    let (path, content) = named_file(&prompt);
    let file_path = match working_directory(body.get("system")) {
        Some(cwd) => format!("{}/{path}", cwd.trim_end_matches('/')),
        None => path.clone(),
    };
    Reply::ToolUses {
        text: Some(format!("I'll write {path}.")),
        calls: vec![ToolCall::new("Write", json!({ "file_path": file_path, "content": content }))],
    }
}

/// The plan file Claude Code's plan mode names in the conversation (`… create your plan at
/// /home/x/.claude/plans/some-slug.md using the Write tool`).
fn plan_file(body: &Value) -> Option<String> {
    let text = body.to_string();
    let at = text.find("/.claude/plans/")?;
    let start = text[..at].rfind(|c: char| c.is_whitespace() || c == '"').map_or(0, |i| i + 1);
    let end = at + text[at..].find(".md")? + ".md".len();
    Some(text[start..end].to_owned())
}

/// The text of the prompt that started the current turn (system reminders left out).
fn last_prompt(messages: &[Value]) -> String {
    // As in `reply_index`: the last user message that carries no tool result.
    let prompt = messages.iter().rev().find(|m| {
        m.get("role").and_then(Value::as_str) == Some("user")
            && match m.get("content") {
                Some(Value::String(_)) => true,
                Some(Value::Array(blocks)) => !blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")),
                _ => false,
            }
    });
    match prompt.and_then(|m| m.get("content")) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim_start().starts_with("<system-reminder>"))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The command of a prompt that says ``run `COMMAND` `` (a `Bash` call instead of a `Write`).
pub fn named_command(prompt: &str) -> Option<String> {
    let start = prompt.find("run `")? + "run `".len();
    let len = prompt[start..].find('`')?;
    let command = prompt[start..start + len].trim();
    (!command.is_empty()).then(|| command.to_owned())
}

/// The file a prompt asks for and its content: the first word that looks like a relative file
/// name (`notes/hello.txt`), else [`DEFAULT_PATH`]; the text after "containing", else
/// [`DEFAULT_CONTENT`] (a final newline added).
pub fn named_file(prompt: &str) -> (String, String) {
    let path = prompt
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| "\"'`()[]<>".contains(c))
                .trim_end_matches(['.', ',', ';', ':', '!', '?'])
        })
        .find(|w| looks_like_file(w))
        .unwrap_or(DEFAULT_PATH)
        .to_owned();
    let lower = prompt.to_ascii_lowercase();
    let content = match lower.find(" containing ") {
        Some(i) => {
            let mut text = prompt[i + " containing ".len()..].trim().to_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text
        }
        None => DEFAULT_CONTENT.to_owned(),
    };
    (path, content)
}

fn looks_like_file(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else { return false };
    !stem.is_empty()
        && !stem.ends_with('/')
        && (1..=8).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
        && !word.starts_with('/')
        && !word.starts_with('.')
        && !word.split('/').any(|part| part == "..")
        && word.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
}

/// `Primary working directory: …` from Claude Code's system prompt (a string or text blocks).
fn working_directory(system: Option<&Value>) -> Option<String> {
    let texts: Vec<&str> = match system? {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect()
        }
        _ => return None,
    };
    texts.iter().flat_map(|t| t.lines()).find_map(|line| {
        let dir = line.trim().strip_prefix("Primary working directory:")?.trim();
        (!dir.is_empty()).then(|| dir.to_owned())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_prompt_saying_run_names_a_command() {
        assert_eq!(
            named_command("please run `shutdown -h now` now").as_deref(),
            Some("shutdown -h now")
        );
        assert_eq!(named_command("write run.txt"), None);
        assert_eq!(named_command("run `` or `"), None);
    }

    #[test]
    fn the_prompt_names_the_file_and_its_content() {
        assert_eq!(
            named_file("Please create notes/todo.md containing buy milk"),
            ("notes/todo.md".into(), "buy milk\n".into())
        );
        assert_eq!(named_file("write `hello.txt`."), ("hello.txt".into(), DEFAULT_CONTENT.into()));
        assert_eq!(named_file("say hi"), (DEFAULT_PATH.into(), DEFAULT_CONTENT.into()));
        // Version numbers, dotfiles, absolute and escaping paths are not file names here.
        assert_eq!(named_file("bump to 1.2 in /etc/x.conf or ../up.txt or .env").0, DEFAULT_PATH);
    }

    #[test]
    fn the_write_lands_in_the_working_directory_of_the_system_prompt() {
        let body = json!({
            "system": [
                {"type": "text", "text": "You are Claude Code."},
                {"type": "text", "text": "<env>\n Primary working directory: /w/tree/\nIs a git repository: true\n</env>"}
            ],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>ignore.txt</system-reminder>"},
                    {"type": "text", "text": "write a.txt containing hi"}
                ]}
            ]
        });
        let Reply::ToolUses { calls, .. } = resolve(&Reply::WriteNamedFile, &body) else {
            panic!("not a tool call");
        };
        assert_eq!(calls[0].name, "Write");
        assert_eq!(calls[0].input, json!({"file_path": "/w/tree/a.txt", "content": "hi\n"}));
        // No system prompt: the name as given; other replies pass through.
        let Reply::ToolUses { calls, .. } = resolve(&Reply::WriteNamedFile, &Value::Null) else {
            panic!("not a tool call");
        };
        assert_eq!(calls[0].input["file_path"], DEFAULT_PATH);
        assert!(matches!(resolve(&Reply::Text("x".into()), &body), Reply::Text(t) if t == "x"));
    }

    #[test]
    fn the_plan_file_is_the_one_plan_mode_names() {
        let body = json!({"messages": [{"role": "user", "content": [{"type": "text",
            "text": "<system-reminder>No plan file exists yet. You should create your plan at /h/.claude/plans/do-it-swan.md using the Write tool.</system-reminder>"}]}]});
        let Reply::ToolUses { calls, .. } = resolve(&Reply::WritePlanFile("# P".into()), &body)
        else {
            panic!()
        };
        assert_eq!(
            calls[0].input,
            json!({"file_path": "/h/.claude/plans/do-it-swan.md", "content": "# P"})
        );
    }
}
