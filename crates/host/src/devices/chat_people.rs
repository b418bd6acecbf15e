//! Chat bridges and the chat users paired with them, as the host acts on them: each bridge
//! reports itself (`reportChatBridge`), the person lists them and unpairs a user
//! (`unpairChatPerson`: their connections close), and a connection acting for a chat user
//! (`hello.onBehalfOf`) is accepted only while some bridge lists them as paired since the last
//! unpairing (`chat_registry`).

use nucleic_protocol::{ChatBridgeReport, ChatBridgeReported, ChatBridges};

use super::chat_registry::listing;
use super::credentials::Revocation;
use crate::clock::unix_millis;
use crate::context::Context;
use crate::error::HostError;

impl Context {
    /// Records a bridge's report; answers the users it lists whom the person unpaired.
    pub fn report_chat_bridge(
        &self,
        report: ChatBridgeReport,
    ) -> Result<ChatBridgeReported, HostError> {
        if let Some(why) = report.refused() {
            return Err(HostError::Invalid(why));
        }
        let people = &self.chat_people;
        let mut registry = people.lock();
        let unpaired: Vec<String> = report
            .paired
            .iter()
            .filter(|p| !registry.counts(p))
            .map(|p| p.person.clone())
            .collect();
        registry.bridges.insert(report.bridge.clone(), (report, unix_millis()));
        people.save(&registry)?;
        Ok(ChatBridgeReported { unpaired })
    }

    /// Every bridge, its state and its paired users.
    pub fn list_chat_bridges(&self) -> ChatBridges {
        listing(&self.chat_people.lock())
    }

    /// Unpairs `person`: the host refuses to act for them (and closes their connections) until
    /// a bridge reports them paired again, later than now.
    pub fn unpair_chat_person(&self, person: &str) -> Result<ChatBridges, HostError> {
        let people = &self.chat_people;
        let mut registry = people.lock();
        if !registry.paired(person) {
            return Err(HostError::NotFound(format!("chat user {person} (not paired)")));
        }
        registry.unpaired.insert(person.to_owned(), unix_millis());
        people.save(&registry)?;
        let _ = self.credentials.revocations.send(Revocation::Person(person.to_owned()));
        Ok(listing(&registry))
    }

    /// Whether a connection may act for `person`, or why not.
    pub fn chat_person_allowed(&self, person: &str) -> Result<(), String> {
        self.chat_people.allowed(person)
    }
}
