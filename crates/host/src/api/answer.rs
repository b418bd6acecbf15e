//! Reply idempotency on the context: one answer per (client, message id), remembered.

use super::reply_turns::*;
use crate::context::Context;
use crate::error::HostError;

impl Context {
    /// Waits until no other copy of `(client, message)` is being answered, and holds the turn
    /// while the caller recalls, carries out and remembers the reply.
    pub async fn reply_turn(&self, client: &str, message: &str) -> Result<ReplyTurn, HostError> {
        self.reply_turns.take(client, message, REPLY_WITHIN).await
    }

    /// The reply already given to `(client, message)`, for idempotent client message ids.
    pub async fn recall_reply(
        &self,
        client: &str,
        message: &str,
    ) -> Result<Option<String>, HostError> {
        let (client, message) = (client.to_owned(), message.to_owned());
        self.catalog(move |c| c.recall_response(&client, &message)).await
    }

    /// Remembers the reply to `(client, message)` (the first one stored wins).
    pub async fn remember_reply(
        &self,
        client: &str,
        message: &str,
        reply: String,
    ) -> Result<(), HostError> {
        let (client, message) = (client.to_owned(), message.to_owned());
        self.catalog(move |c| c.remember_response(&client, &message, &reply)).await
    }
}
