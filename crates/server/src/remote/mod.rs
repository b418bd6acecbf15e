//! Remote access: the daemon dials out to a relay (`relay/`), proves its room, and serves every
//! paired device over its own Noise channel inside that one connection — the same sync
//! protocol as `/ws`, carried by `wire`. Nothing listens on a public address. Pairing links are
//! opened here (`pairing`); the keys live in `identity`; the relay connection in `relay` (its
//! TCP/TLS dialling in `dial`), each device's stream in `devices`, the framing inside a channel
//! message in `framing`.

mod devices;
pub mod framing;
pub mod identity;
pub mod lan;
pub mod pairing;
mod relay;
mod status;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use identity::{IDENTITY_FILE, Identity, IdentityError};
pub use pairing::{PAIRING_TTL, Pairing, PairingLink};
pub use relay::run as run_relay;
pub use status::{RELAY_STATUS_FILE, RelayState, RelayStatus, read as read_relay_status};

/// How the daemon reaches devices from afar.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// The relay's base URL (`ws://…` or `wss://…`; `http(s)://` is taken as its WebSocket twin).
    pub relay: String,
    /// Where the cockpit is served for devices (the pairing link's base). Default: the relay's
    /// `http(s)` twin.
    pub app: Option<String>,
    /// `$NUCLEIC_HOME`, where the identity and the relay's status are kept.
    pub home: PathBuf,
    /// Longest wait between two attempts to reach the relay.
    pub max_backoff: Duration,
    /// Direct addresses of the LAN listener (`ws://host:port`), offered in pairing links.
    pub lan: Vec<String>,
    /// A PEM file of CA certificates trusted for a `wss://` relay besides Mozilla's roots (a
    /// self-hosted relay with its own CA).
    pub relay_ca: Option<PathBuf>,
    /// Accept a plain `ws://` relay that is not on loopback (its frames are Noise-encrypted,
    /// but the room, sizes and timing are in the clear, and anyone on the path can pose as it).
    pub allow_plain_relay: bool,
}

/// The daemon's remote side, shared by the relay connection and the server.
#[derive(Debug)]
pub struct Remote {
    pub(crate) config: RemoteConfig,
    pub(crate) identity: Identity,
    /// The relay's WebSocket base URL, normalised.
    pub(crate) relay: String,
    pub(crate) pairing: Pairing,
    pub(crate) status: status::StatusBoard,
    /// How the relay is reached (TCP, TLS), checked when the daemon starts.
    pub(crate) dialer: nucleic_http::dial::Dialer,
}

/// A refused remote setting.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(transparent)]
    Dial(#[from] nucleic_http::dial::DialError),
    #[error(transparent)]
    Identity(#[from] IdentityError),
    #[error("cannot make a pairing secret: {0}")]
    Random(#[from] nucleic_channel::ChannelError),
}

/// Resolves once `stop` turns true (or its sender is gone); holds no borrow of the value.
async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

impl Remote {
    /// Reads (or makes) the host's identity and checks the relay URL.
    pub fn new(config: RemoteConfig) -> Result<Arc<Remote>, RemoteError> {
        let relay = nucleic_http::dial::websocket_url(&config.relay)?;
        let dialer = nucleic_http::dial::Dialer::new(
            &relay,
            config.relay_ca.as_deref(),
            config.allow_plain_relay,
        )?;
        let identity = Identity::load_or_create(&config.home)?;
        let status = status::StatusBoard::new(&config.home, &relay, &identity.host_id());
        Ok(Arc::new(Remote {
            config,
            identity,
            relay,
            pairing: Pairing::default(),
            status,
            dialer,
        }))
    }

    /// The host id (its room at the relay).
    pub fn host_id(&self) -> String {
        self.identity.host_id()
    }

    /// The relay connection's state now.
    pub fn status(&self) -> RelayStatus {
        self.status.now()
    }

    /// Opens a pairing (single use, for `ttl`: at most [`PAIRING_TTL`]) and returns its link.
    pub fn open_pairing(&self, name: &str, ttl: Duration) -> Result<PairingLink, RemoteError> {
        let secret = self.pairing.open(name, ttl.min(PAIRING_TTL))?;
        let app = self.config.app.clone().unwrap_or_else(|| {
            self.relay.replacen("ws://", "http://", 1).replacen("wss://", "https://", 1)
        });
        Ok(PairingLink {
            app,
            relay: self.relay.clone(),
            host_id: self.host_id(),
            host_key: self.identity.noise.public(),
            secret,
            name: name.to_owned(),
            lan: self.config.lan.clone(),
            host_name: pairing::machine_name(),
        })
    }
}
