//! Web Push from the host: devices' subscriptions and quiet hours, and the notifier that, when
//! a session comes to need a person, sends every subscribed device a message carrying only the
//! session's id (see `nucleic-push` and `docs/cockpit.md`).

use std::sync::{Arc, Weak};

use nucleic_catalog::PushSubscriptionRow;
use nucleic_protocol::{PushSettings, QuietHours, WebPushSubscription};
use nucleic_push::{
    Delivery, PushRequest, QuietWindow, RetryPolicy, SubscriptionKeys, Transport, VapidKey, b64,
};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::HostError;
use crate::context::Context;
use crate::error::blocking;

/// The JWT subject push services may contact (RFC 8292 `sub`); `NUCLEIC_VAPID_SUBJECT` overrides.
const DEFAULT_SUBJECT: &str = "mailto:push@nucleic.invalid";
/// How long a push service may hold a message for a device that is offline (seconds).
const TTL_SECS: u32 = 60 * 60;
/// Longest endpoint URL taken.
const MAX_ENDPOINT_BYTES: usize = 2048;

/// What became of one push to one device (for the daemon's log and for tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushReport {
    pub device_id: String,
    pub session_id: String,
    pub delivery: Delivery,
}

/// A subscription as the browser sent it, checked: an `http(s)` endpoint, a P-256 key and a
/// 16-byte secret.
fn checked(
    device_id: &str,
    sub: &WebPushSubscription,
    quiet: Option<QuietHours>,
) -> Result<PushSubscriptionRow, HostError> {
    let invalid = |why: &str| HostError::Invalid(format!("push subscription: {why}"));
    if sub.endpoint.len() > MAX_ENDPOINT_BYTES {
        return Err(invalid("the endpoint URL is over 2048 bytes"));
    }
    nucleic_push::origin(&sub.endpoint)
        .map_err(|_| invalid("the endpoint is not an http(s) URL"))?;
    let p256dh =
        b64::decode(&sub.keys.p256dh).map_err(|_| invalid("keys.p256dh is not base64url"))?;
    let auth = b64::decode(&sub.keys.auth).map_err(|_| invalid("keys.auth is not base64url"))?;
    if auth.len() != 16 {
        return Err(invalid("keys.auth must be 16 bytes"));
    }
    let keys = SubscriptionKeys { p256dh, auth };
    // Encrypting once proves the key is a P-256 point.
    nucleic_push::encrypt(b"{}", &keys)
        .map_err(|_| invalid("keys.p256dh is not a P-256 public key"))?;
    // Hours in a zone this host's time zone database does not know are refused here.
    if let Some(hours) = &quiet {
        QuietWindow::new(hours).map_err(|e| HostError::Invalid(e.to_string()))?;
    }
    Ok(PushSubscriptionRow {
        device_id: device_id.to_owned(),
        endpoint: sub.endpoint.clone(),
        p256dh: keys.p256dh,
        auth: keys.auth,
        quiet_hours: quiet,
        created_at: crate::clock::unix_millis(),
    })
}

impl Context {
    /// The host's VAPID key (`$NUCLEIC_HOME/vapid.key`, made once, 0600).
    async fn vapid_key(&self) -> Result<VapidKey, HostError> {
        let path = self.config.home.join(nucleic_push::VAPID_KEY_FILE);
        blocking(move || {
            VapidKey::load_or_create(&path).map_err(|e| HostError::Invalid(e.to_string()))
        })
        .await
    }

    /// Push as device `device_id` sees it.
    pub async fn push_settings(&self, device_id: &str) -> Result<PushSettings, HostError> {
        let vapid = self.vapid_key().await?;
        let owned = device_id.to_owned();
        let row = self.catalog(move |c| c.push_subscription(&owned)).await?;
        Ok(PushSettings {
            vapid_public_key: vapid.public_key(),
            subscribed: row.is_some(),
            quiet_hours: row.and_then(|r| r.quiet_hours),
        })
    }

    /// Subscribes device `device_id` (replacing its subscription) or, with `None`, drops it.
    pub async fn set_push(
        &self,
        device_id: &str,
        subscription: Option<WebPushSubscription>,
        quiet_hours: Option<QuietHours>,
    ) -> Result<PushSettings, HostError> {
        let owned = device_id.to_owned();
        match subscription {
            Some(sub) => {
                let row = checked(device_id, &sub, quiet_hours)?;
                self.catalog(move |c| c.set_push_subscription(&row)).await.map_err(
                    |e| match e {
                        HostError::Catalog(nucleic_catalog::CatalogError::DeviceNotFound {
                            ..
                        }) => HostError::NotFound(format!("device {owned} (revoked?)")),
                        other => other,
                    },
                )?;
            }
            None => {
                self.catalog(move |c| c.delete_push_subscription(&owned, None)).await?;
            }
        }
        self.push_settings(device_id).await
    }

    /// Starts the notifier: every session change that needs a person (the rule of
    /// [`nucleic_push::needs_person`]) sends each subscribed device outside its quiet hours one
    /// content-free message, tried per `policy`; expired subscriptions (404/410) are dropped.
    /// Ends when the host is dropped. Outcomes go to `reports` when given, else failures to
    /// stderr.
    pub(crate) fn start_push(
        self: &Arc<Self>,
        policy: RetryPolicy,
        reports: Option<mpsc::UnboundedSender<PushReport>>,
    ) -> JoinHandle<()> {
        let mut changes = self.changes();
        let host = Arc::downgrade(self);
        let transport = Transport::public();
        tokio::spawn(async move {
            let mut watch = nucleic_push::SessionWatch::default();
            loop {
                let after = match changes.recv().await {
                    Ok(after) => after,
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                if watch.observe(&after).is_some() {
                    let Some(strong) = host.upgrade() else { return };
                    let (transport, reports) = (transport.clone(), reports.clone());
                    tokio::spawn(push_to_all(strong, after.session_id, policy, transport, reports));
                }
            }
        })
    }
}

/// One message per subscribed device, in parallel.
async fn push_to_all(
    host: Arc<Context>,
    session_id: String,
    policy: RetryPolicy,
    transport: Transport,
    reports: Option<mpsc::UnboundedSender<PushReport>>,
) {
    let report = |device_id: &str, delivery: Delivery| {
        let r = PushReport {
            device_id: device_id.to_owned(),
            session_id: session_id.clone(),
            delivery,
        };
        match &reports {
            Some(tx) => {
                let _ = tx.send(r);
            }
            None if r.delivery != Delivery::Delivered => {
                eprintln!("nucleic: push to device {}: {:?}", r.device_id, r.delivery);
            }
            None => {}
        }
    };
    let (vapid, subs) =
        match (host.vapid_key().await, host.catalog(|c| c.active_push_subscriptions()).await) {
            (Ok(v), Ok(s)) => (v, s),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("nucleic: push skipped: {e}");
                return;
            }
        };
    let subject = std::env::var("NUCLEIC_VAPID_SUBJECT").unwrap_or_else(|_| DEFAULT_SUBJECT.into());
    let now = crate::clock::unix_millis();
    let weak: Weak<Context> = Arc::downgrade(&host);
    drop(host);
    let mut sends = Vec::new();
    for sub in subs.into_iter().filter(|s| !in_quiet_hours(s, now)) {
        let keys = SubscriptionKeys { p256dh: sub.p256dh.clone(), auth: sub.auth.clone() };
        let made =
            nucleic_push::encrypt(&nucleic_push::payload(&session_id), &keys).and_then(|body| {
                let secs = u64::try_from(now / 1000).unwrap_or_default();
                let authorization = vapid.authorization(&sub.endpoint, &subject, secs)?;
                Ok(PushRequest {
                    endpoint: sub.endpoint.clone(),
                    authorization,
                    body,
                    ttl_secs: TTL_SECS,
                })
            });
        match made {
            Ok(request) => {
                let transport = transport.clone();
                sends.push(tokio::spawn(async move {
                    (sub, nucleic_push::deliver(&request, policy, &transport).await)
                }));
            }
            Err(e) => report(&sub.device_id, Delivery::GaveUp { tries: 0, last: e.to_string() }),
        }
    }
    for send in sends {
        let Ok((sub, delivery)) = send.await else { continue };
        if delivery == Delivery::Gone
            && let Some(host) = weak.upgrade()
        {
            let (device, endpoint) = (sub.device_id.clone(), sub.endpoint.clone());
            let _ =
                host.catalog(move |c| c.delete_push_subscription(&device, Some(&endpoint))).await;
        }
        report(&sub.device_id, delivery);
    }
}

/// Whether `sub`'s device is in its quiet hours at `now` (unix ms) on its own clock. Hours whose
/// zone no longer loads (the host's tz database changed) are not quiet, and that is logged.
fn in_quiet_hours(sub: &PushSubscriptionRow, now: i64) -> bool {
    let Some(hours) = &sub.quiet_hours else { return false };
    match QuietWindow::new(hours) {
        Ok(window) => window.contains(now),
        Err(e) => {
            eprintln!("nucleic: push to device {}: quiet hours ignored: {e}", sub.device_id);
            false
        }
    }
}
