//! Tool execution: really runs Write, Edit and Bash, confined to the working directory.

use serde_json::{Value, json};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

/// What a tool call produced, in the terms of a tool-result `user` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The text the model sees.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// The structured `tool_use_result`.
    pub tool_use_result: Value,
}

impl Outcome {
    /// A failed call: `<tool_use_error>` text and an `Error: …` tool_use_result.
    pub fn error(message: &str) -> Self {
        Self {
            content: format!("<tool_use_error>{message}</tool_use_error>"),
            is_error: true,
            tool_use_result: json!(format!("Error: {message}")),
        }
    }
}

const MODIFIED: &str = " The user modified your proposed content before accepting it.";
const CURRENT: &str = " (file state is current in your context — no need to Read it back)";

/// An approved plan, in the real CLI's words.
pub fn plan_approved(input: &Value) -> Outcome {
    let plan = input.get("plan").and_then(Value::as_str).unwrap_or_default();
    Outcome {
        content: format!(
            "User has approved your plan. You can now start coding.\n\n## Approved Plan:\n{plan}"
        ),
        is_error: false,
        tool_use_result: json!({"plan": plan, "isAgent": false}),
    }
}

/// Answered questions (`answers` in the allowed input), in the real CLI's words.
pub fn questions_answered(input: &Value) -> Outcome {
    let Some(answers) = input.get("answers").and_then(Value::as_object) else {
        return Outcome::error("the questions were not answered");
    };
    let pairs: Vec<String> = answers
        .iter()
        .map(|(q, a)| format!("{q:?}={:?}", a.as_str().unwrap_or_default()))
        .collect();
    Outcome {
        content: format!(
            "Your questions have been answered: {}. You can now continue with these answers in mind.",
            pairs.join(", ")
        ),
        is_error: false,
        tool_use_result: input.clone(),
    }
}

/// Joins `path` onto `cwd` (unless absolute) and removes `.` and `..` lexically.
pub fn absolute(cwd: &Path, path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in cwd.join(path).components() {
        match comp {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves `path` and refuses anything outside `cwd`, symlinks included.
pub fn resolve_in_cwd(cwd: &Path, path: &str) -> Result<PathBuf, String> {
    let cwd_real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let target = absolute(cwd, path);
    let outside = || {
        format!(
            "Path {} is outside the working directory {}; the simulated agent only touches files inside it.",
            target.display(),
            cwd.display()
        )
    };
    if !target.starts_with(cwd) && !target.starts_with(&cwd_real) {
        return Err(outside());
    }
    // The deepest existing ancestor must also resolve inside cwd (catches symlinks).
    let mut probe = target.as_path();
    loop {
        if let Ok(real) = probe.canonicalize() {
            if !real.starts_with(&cwd_real) {
                return Err(outside());
            }
            break;
        }
        match probe.parent() {
            Some(parent) => probe = parent,
            None => break,
        }
    }
    Ok(target)
}

fn str_field<'a>(tool: &str, input: &'a Value, name: &str) -> Result<&'a str, Outcome> {
    input.get(name).and_then(Value::as_str).ok_or_else(|| {
        Outcome::error(&format!(
            "InputValidationError: {tool} failed due to the following issue:\nThe required parameter `{name}` is missing"
        ))
    })
}

/// Runs the Write tool.
pub fn write(cwd: &Path, input: &Value, user_modified: bool) -> Outcome {
    match try_write(cwd, input, user_modified) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn try_write(cwd: &Path, input: &Value, user_modified: bool) -> Result<Outcome, Outcome> {
    let file_path = str_field("Write", input, "file_path")?;
    let content = str_field("Write", input, "content")?;
    let path = resolve_in_cwd(cwd, file_path).map_err(|e| Outcome::error(&e))?;
    let original = std::fs::read_to_string(&path).ok();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Outcome::error(&format!("Cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(&path, content)
        .map_err(|e| Outcome::error(&format!("Cannot write {}: {e}", path.display())))?;
    let shown = path.display();
    let suffix = if user_modified { MODIFIED } else { CURRENT };
    let (kind, text) = match original {
        None => ("create", format!("File created successfully at: {shown}{suffix}")),
        Some(_) => ("update", format!("The file {shown} has been updated successfully.{suffix}")),
    };
    Ok(Outcome {
        content: text,
        is_error: false,
        tool_use_result: json!({
            "type": kind,
            "filePath": path.to_string_lossy(),
            "content": content,
            "structuredPatch": [],
            "originalFile": original,
            "userModified": user_modified,
        }),
    })
}

/// Runs the Edit tool.
pub fn edit(cwd: &Path, input: &Value, user_modified: bool) -> Outcome {
    match try_edit(cwd, input, user_modified) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn try_edit(cwd: &Path, input: &Value, user_modified: bool) -> Result<Outcome, Outcome> {
    let file_path = str_field("Edit", input, "file_path")?;
    let old = str_field("Edit", input, "old_string")?;
    let new = str_field("Edit", input, "new_string")?;
    let replace_all = input.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
    let path = resolve_in_cwd(cwd, file_path).map_err(|e| Outcome::error(&e))?;
    let original = std::fs::read_to_string(&path).map_err(|_| {
        Outcome::error(&format!(
            "File does not exist. Current working directory: {}",
            cwd.display()
        ))
    })?;
    let count = original.matches(old).count();
    if old.is_empty() || count == 0 {
        return Err(Outcome::error(&format!(
            "String to replace not found in file.\nString: {old}"
        )));
    }
    if count > 1 && !replace_all {
        return Err(Outcome::error(&format!(
            "Found {count} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: {old}"
        )));
    }
    let updated =
        if replace_all { original.replace(old, new) } else { original.replacen(old, new, 1) };
    std::fs::write(&path, &updated)
        .map_err(|e| Outcome::error(&format!("Cannot write {}: {e}", path.display())))?;
    let suffix = if user_modified { MODIFIED } else { "" };
    Ok(Outcome {
        content: format!("The file {} has been updated successfully.{suffix}", path.display()),
        is_error: false,
        tool_use_result: json!({
            "filePath": path.to_string_lossy(),
            "oldString": old,
            "newString": new,
            "originalFile": original,
            "structuredPatch": [],
            "userModified": user_modified,
            "replaceAll": replace_all,
        }),
    })
}

/// A running Bash command (`sh -c` in cwd), polled so interrupts can kill it.
#[derive(Debug)]
pub struct BashRun {
    child: Child,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Option<JoinHandle<Vec<u8>>> {
    pipe.map(|mut p| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = p.read_to_end(&mut buf);
            buf
        })
    })
}

impl BashRun {
    /// Starts the command; an `Err` outcome if it could not be spawned or input is bad.
    pub fn start(cwd: &Path, input: &Value) -> Result<Self, Outcome> {
        let command = str_field("Bash", input, "command")?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Outcome::error(&format!("Cannot run sh: {e}")))?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        Ok(Self { child, stdout, stderr })
    }

    /// The outcome once the command has exited, `None` while it still runs.
    pub fn try_finish(&mut self) -> Option<Outcome> {
        let status = match self.child.try_wait() {
            Ok(None) => return None,
            Ok(Some(status)) => status,
            Err(e) => return Some(Outcome::error(&format!("Cannot wait for sh: {e}"))),
        };
        let join = |h: Option<JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok())
                .map(|b| String::from_utf8_lossy(&b).trim_end().to_owned())
                .unwrap_or_default()
        };
        let stdout = join(self.stdout.take());
        let stderr = join(self.stderr.take());
        let mut output = stdout.clone();
        if !stderr.is_empty() {
            if !output.is_empty() {
                output.push('\n');
            }
            output.push_str(&stderr);
        }
        if status.success() {
            return Some(Outcome {
                content: output,
                is_error: false,
                tool_use_result: json!({
                    "stdout": stdout,
                    "stderr": stderr,
                    "interrupted": false,
                    "isImage": false,
                    "noOutputExpected": false,
                }),
            });
        }
        let code = status.code().map_or_else(|| "killed".to_owned(), |c| c.to_string());
        let text = format!("Exit code {code}\n{output}").trim_end().to_owned();
        Some(Outcome {
            content: text.clone(),
            is_error: true,
            tool_use_result: json!(format!("Error: {text}")),
        })
    }

    /// Kills the command (interrupt).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        assert_eq!(resolve_in_cwd(cwd, "a/../b.txt").unwrap(), cwd.join("b.txt"));
        assert!(resolve_in_cwd(cwd, "../x.txt").is_err());
        assert!(resolve_in_cwd(cwd, "/etc/passwd").is_err());
        std::os::unix::fs::symlink("/tmp", cwd.join("out")).unwrap();
        assert!(resolve_in_cwd(cwd, "out/x.txt").is_err());
    }

    #[test]
    fn write_then_edit() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let w = write(cwd, &json!({"file_path": "d/a.txt", "content": "one two\n"}), false);
        assert!(!w.is_error, "{w:?}");
        assert!(w.content.starts_with("File created successfully at: "));
        let e = edit(
            cwd,
            &json!({"file_path": cwd.join("d/a.txt"), "old_string": "two", "new_string": "2"}),
            true,
        );
        assert!(!e.is_error, "{e:?}");
        assert!(e.content.ends_with(MODIFIED));
        assert_eq!(std::fs::read_to_string(cwd.join("d/a.txt")).unwrap(), "one 2\n");
        let miss = edit(
            cwd,
            &json!({"file_path": "d/a.txt", "old_string": "zzz", "new_string": ""}),
            false,
        );
        assert!(miss.is_error);
        assert!(write(cwd, &json!({"file_path": "a.txt"}), false).is_error);
    }

    #[test]
    fn bash_captures_output_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let run = |cmd: &str| {
            let mut r = BashRun::start(dir.path(), &json!({"command": cmd})).unwrap();
            loop {
                if let Some(o) = r.try_finish() {
                    return o;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        let ok = run("echo hi; echo err >&2");
        assert_eq!(ok.content, "hi\nerr");
        assert!(!ok.is_error);
        let bad = run("echo nope; exit 4");
        assert!(bad.is_error);
        assert_eq!(bad.content, "Exit code 4\nnope");
    }
}
