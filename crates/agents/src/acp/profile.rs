//! One profile per ACP agent (its command, environment, mode names and quirks) and the launch
//! options of an ACP session.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use nucleic_protocol::Backend;

use crate::error::AgentError;
use crate::options::CommonOptions;
use crate::process::SpawnSpec;

/// The Gemini CLI version the adapter is tested against.
pub const TESTED_GEMINI: &str = "0.61.0";

/// How long an agent has to answer `initialize` and then `session/new` (Gemini CLI takes 2–5 s
/// on a busy 2-core machine; OpenCode's `session/new` up to 9 s).
pub const DEFAULT_SETUP_DEADLINE: Duration = Duration::from_secs(60);

/// What differs between ACP agents.
#[derive(Debug)]
pub struct AcpProfile {
    /// The backend its sessions are recorded under.
    pub backend: Backend,
    /// Its name in messages ("Gemini CLI").
    pub label: &'static str,
    /// Arguments that start its ACP server on stdio.
    pub args: &'static [&'static str],
    /// The flag that picks the model (`--model`), followed by the model's name.
    pub model_flag: Option<&'static str>,
    /// Variables it always gets (the extra environment overrides them).
    pub env: &'static [(&'static str, &'static str)],
    /// Nucleic's permission modes (Claude Code's names) and the agent's mode ids.
    pub modes: &'static [(&'static str, &'static str)],
    /// A missing file read through `fs/read_text_file` is answered `{"content": ""}` (Gemini
    /// fails to create a new file on any error); otherwise with a "not found" error.
    pub missing_file_as_empty: bool,
    /// Message chunks starting with these are the agent's own notices, not the model's text.
    pub hidden_text_prefixes: &'static [&'static str],
}

/// Gemini CLI (`gemini --acp`).
pub const GEMINI: AcpProfile = AcpProfile {
    backend: Backend::Gemini,
    label: "Gemini CLI",
    args: &["--acp"],
    model_flag: Some("--model"),
    // One process: the default wrapper re-spawns itself with stdio inherited and ignores
    // SIGTERM, and costs a second node process (368 MB instead of 222 MB) and 1.5 s. The
    // worktree is trusted: in an untrusted folder Gemini refuses its `autoEdit` and `yolo`
    // modes (what `--skip-trust` sets; the worktree is Nucleic's, and the agent is confined).
    env: &[("GEMINI_CLI_NO_RELAUNCH", "true"), ("GEMINI_CLI_TRUST_WORKSPACE", "true")],
    modes: &[
        ("default", "default"),
        ("acceptEdits", "autoEdit"),
        ("plan", "plan"),
        ("bypassPermissions", "yolo"),
    ],
    missing_file_as_empty: true,
    // `session/set_mode` is confirmed by a message chunk "[MODE_UPDATE] <mode>".
    hidden_text_prefixes: &["[MODE_UPDATE]"],
};

/// Everything needed to start one ACP agent and its session.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The agent's executable, the worktree (cwd, `session/new`'s `cwd`, and the only place
    /// its `fs/*` calls may touch), the permission mode (mapped through the profile), extra
    /// environment, confinement.
    pub common: CommonOptions,
    pub profile: &'static AcpProfile,
    /// How long `initialize` may take; `session/new` must be answered by the end of a second
    /// such period.
    pub setup_deadline: Duration,
}

impl AcpOptions {
    /// `profile`'s agent at `program` in `cwd`, mode `default`.
    pub fn new(profile: &'static AcpProfile, program: PathBuf, cwd: PathBuf) -> AcpOptions {
        AcpOptions {
            common: CommonOptions::new(program, cwd),
            profile,
            setup_deadline: DEFAULT_SETUP_DEADLINE,
        }
    }

    /// The agent's mode id for the Nucleic permission mode; other modes are refused.
    pub fn agent_mode(&self) -> Result<&'static str, AgentError> {
        let mode = self.common.permission_mode.as_str();
        let found = self.profile.modes.iter().find(|(m, _)| *m == mode);
        found.map(|(_, a)| *a).ok_or_else(|| {
            let known: Vec<&str> = self.profile.modes.iter().map(|(m, _)| *m).collect();
            AgentError::InvalidInput(format!(
                "{} has no permission mode {mode:?} (it supports {})",
                self.profile.label,
                known.join(", ")
            ))
        })
    }

    /// The process: the agent's ACP server on stdio.
    pub fn spawn_spec(&self) -> Result<SpawnSpec, AgentError> {
        self.agent_mode()?;
        if self.common.resume.is_some() {
            return Err(AgentError::Refused(format!(
                "the {} backend cannot resume yet: start a new session with the transcript as context",
                self.profile.label
            )));
        }
        let mut args: Vec<OsString> = self.profile.args.iter().map(OsString::from).collect();
        match (self.profile.model_flag, &self.common.model) {
            (Some(flag), Some(model)) => args.extend([flag.into(), model.into()]),
            (None, Some(_)) => {
                return Err(AgentError::Refused(format!(
                    "the {} backend cannot be given a model",
                    self.profile.label
                )));
            }
            (_, None) => {}
        }
        let env =
            self.profile.env.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))).collect();
        Ok(self.common.spawn_spec(args, env))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_through_the_profile_and_others_are_refused() {
        let mut o = AcpOptions::new(&GEMINI, "gemini".into(), "/w".into());
        assert_eq!(o.agent_mode().unwrap(), "default");
        let spec = o.spawn_spec().unwrap();
        assert_eq!(spec.args, vec![OsString::from("--acp")]);
        assert!(spec.env.contains(&("GEMINI_CLI_NO_RELAUNCH".into(), "true".into())));
        o.common.model = Some("gemini-2.5-pro".into());
        let args = o.spawn_spec().unwrap().args;
        assert_eq!(args, ["--acp", "--model", "gemini-2.5-pro"].map(OsString::from));
        o.common.model = None;
        o.common.permission_mode = "bypassPermissions".into();
        assert_eq!(o.agent_mode().unwrap(), "yolo");
        o.common.permission_mode = "dontAsk".into();
        let err = o.spawn_spec().unwrap_err().to_string();
        assert!(err.contains("dontAsk") && err.contains("acceptEdits"), "{err}");
        o.common.permission_mode = "default".into();
        o.common.resume = Some("s".into());
        assert!(o.spawn_spec().unwrap_err().to_string().contains("cannot resume"));
    }
}
