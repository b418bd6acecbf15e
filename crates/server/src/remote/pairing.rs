//! The one-time pairing a person opens with `nucleic pair` (or the cockpit on the host's own
//! machine): a fresh 256-bit secret, valid for [`PAIRING_TTL`] and for one device only, and the
//! link that carries it with everything a device needs to pair: the relay, the host id and the
//! host's static key. The secret travels in the link's fragment, which browsers never send to
//! a server (the relay or whoever serves the app never sees it).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use nucleic_channel::PairingSecret;

/// How long a pairing link can be used.
pub const PAIRING_TTL: Duration = Duration::from_secs(600);

/// An open pairing.
#[derive(Debug)]
struct Open {
    secret: PairingSecret,
    name: String,
    expires: Instant,
}

/// The daemon's pairing: at most one open at a time (a new one replaces the old link).
#[derive(Debug, Default)]
pub struct Pairing {
    open: Mutex<Option<Open>>,
}

pub use nucleic_channel::link::PairingLink;

/// This machine's name (the kernel's host name), if it has a printable one.
pub(crate) fn machine_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| nucleic_channel::link::printable(&text))
}

impl Pairing {
    /// Opens a pairing (replacing one still open): its secret, valid for `ttl`.
    pub fn open(
        &self,
        name: &str,
        ttl: Duration,
    ) -> Result<PairingSecret, nucleic_channel::ChannelError> {
        let secret = PairingSecret::generate()?;
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *open = Some(Open {
            secret: secret.clone(),
            name: name.to_owned(),
            expires: Instant::now() + ttl,
        });
        Ok(secret)
    }

    /// The secret on offer, if a pairing is open and unexpired.
    pub fn secret(&self) -> Option<PairingSecret> {
        let open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        open.as_ref().filter(|o| Instant::now() < o.expires).map(|o| o.secret.clone())
    }

    /// Spends the pairing if `secret` is still the one on offer and unexpired: the name to
    /// record the device under. Single use: a second device gets `None`.
    pub fn spend(&self, secret: &PairingSecret) -> Option<String> {
        let mut open = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match open.take() {
            Some(o) if o.secret == *secret && Instant::now() < o.expires => Some(o.name),
            other => {
                *open = other.filter(|o| Instant::now() < o.expires);
                None
            }
        }
    }
}

/// The link as a QR code for a terminal (two rows of modules per line).
pub fn qr_terminal(text: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::L).ok()?;
    Some(code.render::<qrcode::render::unicode::Dense1x2>().quiet_zone(true).build())
}

/// The link as a QR code in SVG (for the cockpit's pairing sheet).
pub fn qr_svg(text: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(text, qrcode::EcLevel::L).ok()?;
    Some(code.render::<qrcode::render::svg::Color<'_>>().min_dimensions(240, 240).build())
}

/// The reply to `pairDevice`: the link, with a QR code, or why not. Never remembered (it
/// carries the secret); refused through the relay (a stolen phone must not mint links).
pub fn answer(
    state: &crate::AppState,
    message_id: &str,
    name: Option<String>,
    ttl_secs: Option<u32>,
    through_channel: bool,
) -> nucleic_protocol::HostMessage {
    use nucleic_protocol::{HostMessage, IntentResult, Pairing, ProtocolErrorCode};
    let refuse = |code: ProtocolErrorCode, why: &str| {
        crate::dispatch::error(Some(message_id.to_owned()), code, why)
    };
    if through_channel {
        return refuse(
            ProtocolErrorCode::Unauthorized,
            "pairing links are opened on the host's own machine, not through the relay",
        );
    }
    let Some(remote) = state.remote() else {
        return refuse(
            ProtocolErrorCode::InvalidRequest,
            "remote access is off: start the daemon with `nucleic serve --relay URL` to pair a device",
        );
    };
    let name = name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    let name = name.unwrap_or_else(|| "paired device".to_owned());
    if name.chars().count() > 64 {
        return refuse(ProtocolErrorCode::InvalidRequest, "a device name is at most 64 characters");
    }
    let ttl = ttl_secs.map_or(PAIRING_TTL, |s| Duration::from_secs(u64::from(s)).min(PAIRING_TTL));
    match remote.open_pairing(&name, ttl) {
        Ok(link) => {
            let url = link.url();
            let expires_at = std::time::SystemTime::now()
                .checked_add(ttl)
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis());
            HostMessage::Ack {
                message_id: message_id.to_owned(),
                result: Some(IntentResult::Pairing(Pairing {
                    qr_svg: qr_svg(&url),
                    link: url,
                    host_id: link.host_id,
                    host_key: URL_SAFE_NO_PAD.encode(link.host_key.as_bytes()),
                    relay: link.relay,
                    lan: link.lan,
                    expires_at: u64::try_from(expires_at).unwrap_or(u64::MAX),
                })),
            }
        }
        Err(e) => refuse(ProtocolErrorCode::Internal, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pairing_is_spent_once_and_expires() {
        let p = Pairing::default();
        assert!(p.secret().is_none());
        let s = p.open("phone", PAIRING_TTL).unwrap();
        assert_eq!(p.secret(), Some(s.clone()));
        assert_eq!(p.spend(&s).as_deref(), Some("phone"));
        assert_eq!(p.spend(&s), None, "single use");
        assert!(p.secret().is_none());
        let old = p.open("a", PAIRING_TTL).unwrap();
        let new = p.open("b", PAIRING_TTL).unwrap();
        assert_eq!(p.spend(&old), None, "a replaced link is dead");
        assert_eq!(p.spend(&new).as_deref(), Some("b"));
        let s = p.open("c", Duration::from_millis(0)).unwrap();
        assert!(p.secret().is_none(), "expired");
        assert_eq!(p.spend(&s), None);
    }

    #[test]
    fn the_machine_name_is_printable() {
        assert!(machine_name().is_some_and(|n| !n.is_empty() && n.chars().count() <= 64));
    }

    #[test]
    fn the_link_makes_qr_codes() {
        let url = "https://relay.example/#pair&r=wss%3A%2F%2Frelay.example";
        assert!(qr_terminal(url).unwrap().lines().count() > 20);
        assert!(qr_svg(url).unwrap().starts_with("<?xml"));
    }
}
