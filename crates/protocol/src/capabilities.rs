//! What each agent backend can do, as the host declares it to clients (which hide the rest).

use serde::{Deserialize, Serialize};

use crate::event::Backend;

/// What a backend supports; the host refuses the rest with a clear message and clients hide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Gated tool calls are asked interactively (not just allowed/denied by flags).
    pub interactive_approvals: bool,
    /// An approval may carry edited tool input.
    pub edited_tool_input: bool,
    /// "Always allow this tool in this session".
    pub allow_always: bool,
    /// A deny can also stop the turn.
    pub deny_and_stop: bool,
    /// The current turn can be interrupted without killing the process.
    pub interrupt: bool,
    /// The model can change mid-session.
    pub set_model: bool,
    /// The permission mode can change mid-session.
    pub set_permission_mode: bool,
    /// An earlier conversation can be resumed.
    pub resume: bool,
    /// A resumed conversation can be forked into a new one.
    pub fork: bool,
    /// Text streams as partial deltas.
    pub partial_deltas: bool,
}

/// One backend as the host offers it (in `welcome`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS, schemars::JsonSchema))]
pub struct BackendInfo {
    pub backend: Backend,
    /// The backend's executable was found; sessions can be created with it.
    pub available: bool,
    pub capabilities: Capabilities,
    /// Models a picker can suggest (free text is allowed too).
    pub models: Vec<String>,
    /// Permission modes this backend accepts, the default first.
    #[serde(rename = "permissionModes")]
    pub permission_modes: Vec<String>,
}
