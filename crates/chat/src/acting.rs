//! Each paired chat user acts as themselves: their commands go to the host on a connection of
//! their own (`hello.onBehalfOf`, `telegram:<user>` / `matrix:@user:server`), so the host
//! records every answer, task and finish as theirs, not as the bridge's token.

use std::collections::HashMap;

use nucleic_client::{Client, ClientError};

use crate::bridge::Bridge;

/// Connections kept open for users at most; past it the least recently used one is closed
/// (the next command of its user opens another).
pub const MAX_ACTING_CONNECTIONS: usize = 16;

/// The open per-user connections, with when each was last used.
#[derive(Debug, Default)]
pub(crate) struct ActingClients {
    clients: HashMap<String, (Client, u64)>,
    uses: u64,
}

/// Who `user` of `transport` is recorded as.
pub fn person(transport: &str, user: &str) -> String {
    format!("{transport}:{user}")
}

impl Bridge {
    /// Makes `self.client` the connection acting for `user` (opened on first use), and returns
    /// the bridge's own, for [`Bridge::leave`] to put back when the command is done.
    pub(crate) async fn enter(&mut self, user: &str) -> Result<Client, ClientError> {
        let who = person(self.transport.name(), user);
        let acting = match self.acting.clients.remove(&who) {
            Some((client, _)) => client,
            None => self.client.acting_for(&who).await?,
        };
        Ok(std::mem::replace(&mut self.client, acting))
    }

    /// Drops the connection acting for `who` (they were unpaired).
    pub(crate) fn forget_acting(&mut self, who: &str) {
        self.acting.clients.remove(who);
    }

    /// Puts the bridge's own connection back after a command of `user`, keeping theirs.
    pub(crate) fn leave(&mut self, user: &str, own: Client) {
        let who = person(self.transport.name(), user);
        let acting = std::mem::replace(&mut self.client, own);
        self.acting.uses += 1;
        self.acting.clients.insert(who, (acting, self.acting.uses));
        if self.acting.clients.len() > MAX_ACTING_CONNECTIONS
            && let Some(oldest) = self
                .acting
                .clients
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(who, _)| who.clone())
        {
            self.acting.clients.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_named_by_the_transport_and_the_host_accepts_the_name() {
        for (transport, user) in [("telegram", "12345"), ("matrix", "@ana:example.org")] {
            let who = person(transport, user);
            assert_eq!(nucleic_protocol::on_behalf_of_refused(&who), None, "{who}");
        }
        assert_eq!(person("telegram", "12345"), "telegram:12345");
    }
}
