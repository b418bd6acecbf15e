//! The opening of a connection: `hello` with this client's id, name and features, and what the
//! host said in its `welcome` (its version, backends, relay id, schema digest).

use std::time::Instant;

use nucleic_protocol::{BackendInfo, ClientMessage, HostMessage, PROTOCOL_VERSION};

use crate::client::ClientOptions;
use crate::error::{ClientError, rejection};
use crate::replies::message_type;
use crate::transport::Socket;

/// What the host said in `welcome`.
#[derive(Debug, Clone, PartialEq)]
pub struct Welcome {
    pub host_version: String,
    pub protocol_version: u32,
    pub backends: Vec<BackendInfo>,
    pub relay_host_id: Option<String>,
    /// The host's [`nucleic_protocol::SCHEMA_DIGEST`] (absent from hosts older than it).
    pub schema_digest: Option<String>,
}

impl Welcome {
    /// Whether the host speaks exactly this build's message shapes.
    pub fn same_shapes(&self) -> bool {
        self.schema_digest.as_deref() == Some(nucleic_protocol::SCHEMA_DIGEST)
    }

    /// When the host speaks other message shapes than this build: a sentence saying so, and what
    /// to do (some of its answers may not be readable here).
    pub fn other_build(&self) -> Option<String> {
        if self.same_shapes() {
            return None;
        }
        let theirs = self.schema_digest.as_deref().unwrap_or("none: older than this client");
        Some(format!(
            "the running host (nucleic {}) was built from another revision than this client: \
             its messages' shapes are {theirs}, this client's {} — some answers may not be \
             readable; restart the daemon (`nucleic service restart`, or stop `nucleic serve` \
             and start it again)",
            self.host_version,
            nucleic_protocol::SCHEMA_DIGEST
        ))
    }
}

/// Says hello on a fresh socket and reads the welcome.
pub(crate) async fn hello(
    socket: &mut Socket,
    options: &ClientOptions,
) -> Result<Welcome, ClientError> {
    let hello = ClientMessage::Hello {
        client_id: options.client_id.clone(),
        client_name: options.client_name.clone(),
        protocol_version: PROTOCOL_VERSION,
        features: options.features.clone(),
        device: None,
        on_behalf_of: options.on_behalf_of.clone(),
    };
    socket.send(&hello, options.send_within).await?;
    let within = options.connect_within;
    let deadline = Instant::now() + within;
    loop {
        let Some(message) = socket.recv(deadline).await? else {
            let what = format!("waiting for the host's welcome {}", socket.at());
            return Err(ClientError::Timeout { what, within });
        };
        match message {
            HostMessage::Welcome {
                host_version,
                protocol_version,
                backends,
                relay_host_id,
                schema_digest,
            } => {
                return Ok(Welcome {
                    host_version,
                    protocol_version,
                    backends,
                    relay_host_id,
                    schema_digest,
                });
            }
            HostMessage::SessionChanged { .. } => {}
            other => {
                let why = rejection(&other)
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| format!("it answered hello with {}", message_type(&other)));
                return Err(ClientError::Refused(why));
            }
        }
    }
}
