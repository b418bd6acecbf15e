//! The bridge's report to the host (`reportChatBridge`): its state and the users paired with it,
//! sent when it starts, after a pairing, every minute and when it stops. The host acts for a chat
//! user only while a report lists them; the answer names those the person unpaired (from the
//! cockpit, say), whom the bridge then unpairs here too and tells.

use std::time::Duration;

use nucleic_protocol::{ChatBridgeReport, ChatBridgeReported, ChatBridgeState, ChatPerson, Intent};

use crate::acting::person;
use crate::bridge::{Bridge, BridgeError};

/// How often a running bridge reports (the host shows a bridge silent for 3 minutes as such).
pub const REPORT_EVERY: Duration = Duration::from_secs(60);

impl Bridge {
    /// What the bridge says of itself now.
    fn self_report(
        &self,
        state: ChatBridgeState,
        error: Option<&str>,
    ) -> Result<ChatBridgeReport, BridgeError> {
        let transport = self.transport.name();
        let paired = self
            .pairing
            .list()?
            .into_iter()
            .map(|u| ChatPerson {
                person: person(transport, &u.user),
                chat: u.chat,
                paired_at: u.paired_at_ms,
            })
            .collect();
        let (_, strangers_ignored) = self.pairing.strangers()?;
        Ok(ChatBridgeReport {
            bridge: self.transport.account(),
            state,
            last_error: error.map(|e| e.chars().take(300).collect()),
            paired,
            strangers_ignored,
            outbox_queued: self.outbox.counts()?.queued,
        })
    }

    /// Reports to the host and unpairs here whom the person unpaired there, telling them. A host
    /// that cannot be reached is not an error (the next report tries again).
    pub(crate) async fn report_to_host(
        &mut self,
        state: ChatBridgeState,
        error: Option<&str>,
    ) -> Result<(), BridgeError> {
        let report = self.self_report(state, error)?;
        let chats: Vec<(String, String)> =
            report.paired.iter().map(|p| (p.person.clone(), p.chat.clone())).collect();
        let reported: ChatBridgeReported = match self
            .client
            .intent_as(Intent::ReportChatBridge { report })
            .await
        {
            Ok(reported) => reported,
            Err(e) => {
                self.stats.errors += 1;
                self.write_status("running", Some(&format!("could not report to the host: {e}")));
                return Ok(());
            }
        };
        let prefix = format!("{}:", self.transport.name());
        for who in reported.unpaired {
            let Some(user) = who.strip_prefix(&prefix) else { continue };
            self.forget_acting(&who);
            if self.pairing.unpair(user)?
                && let Some((_, chat)) = chats.iter().find(|(p, _)| *p == who)
            {
                let chat = chat.clone();
                self.say(&chat, "This chat account was unpaired from the host. To use /cc again, pair again: `nucleic chat pair` on the host, then /cc pair CODE here.", &[])?;
            }
        }
        Ok(())
    }
}
