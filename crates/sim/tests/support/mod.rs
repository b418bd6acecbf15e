//! Test harness: runs `fake-claude` over pipes in a temp dir and collects its JSON lines.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_fake-claude");
pub const TIMEOUT: Duration = Duration::from_secs(5);

pub const HOST_ARGS: &[&str] = &[
    "-p",
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--verbose",
    "--permission-mode",
    "default",
    "--strict-mcp-config",
    "--permission-prompt-tool",
    "stdio",
];

pub struct Sim {
    pub child: Child,
    stdin: Option<ChildStdin>,
    pub lines: Receiver<Value>,
    dir: tempfile::TempDir,
}

impl Sim {
    pub fn start(extra: &[&str], fault: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(BIN);
        cmd.args(HOST_ARGS)
            .args(extra)
            .current_dir(dir.path())
            .env_remove("NUCLEIC_SIM_FAULT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(f) = fault {
            cmd.env("NUCLEIC_SIM_FAULT", f);
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value =
                    serde_json::from_str(&line).unwrap_or_else(|_| json!({"unparsed": line}));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self { child, stdin, lines, dir }
    }

    pub fn send(&mut self, value: &Value) {
        self.send_raw(&value.to_string());
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn prompt(&mut self, text: &str) {
        self.send(&json!({"type": "user", "session_id": "", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": null}));
    }

    pub fn control(&mut self, id: &str, request: Value) {
        self.send(&json!({"type": "control_request", "request_id": id, "request": request}));
    }

    pub fn answer(&mut self, request: &Value, response: Value) {
        let id = request["request_id"].clone();
        self.send(&json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": response}}));
    }

    /// Lines up to and including the first one matching `pred`.
    pub fn until(&self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(TIMEOUT)
                .unwrap_or_else(|e| panic!("no matching line ({e}); saw {seen:#?}"));
            let hit = pred(&line);
            seen.push(line);
            if hit {
                return seen;
            }
        }
    }

    pub fn until_type(&self, ty: &str) -> Vec<Value> {
        self.until(|l| l["type"] == ty)
    }

    pub fn last_until_type(&self, ty: &str) -> Value {
        self.until_type(ty).pop().unwrap()
    }

    /// Closes stdin, collects the remaining lines, and returns them with the exit code.
    pub fn finish(mut self) -> (Vec<Value>, i32, String) {
        drop(self.stdin.take());
        let status = wait_timeout(&mut self.child);
        let rest: Vec<Value> = self.lines.try_iter().collect();
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        (rest, status, err)
    }

    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_timeout(child: &mut Child) -> i32 {
    for _ in 0..500 {
        if let Some(status) = child.try_wait().unwrap() {
            std::thread::sleep(Duration::from_millis(20)); // let the reader drain
            return status.code().unwrap_or(-1);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    panic!("fake-claude did not exit");
}

pub fn is_can_use_tool(l: &Value) -> bool {
    l["type"] == "control_request" && l["request"]["subtype"] == "can_use_tool"
}

pub fn tool_result(lines: &[Value]) -> Value {
    lines
        .iter()
        .find(|l| l["type"] == "user" && l["message"]["content"][0]["type"] == "tool_result")
        .cloned()
        .unwrap_or_else(|| panic!("no tool_result in {lines:#?}"))
}
