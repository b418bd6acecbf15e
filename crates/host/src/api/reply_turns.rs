//! One answer at a time per (client, message id): a copy of a request that arrives while the
//! first is still being carried out (a resend after a lost connection, two tabs flushing the
//! same queued action) waits for it and then finds its remembered reply, instead of doing the
//! work a second time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;

use crate::error::HostError;

/// Longest wait for the first copy of a message to be answered.
pub(crate) const REPLY_WITHIN: Duration = Duration::from_secs(120);

/// (client id, message id).
pub(crate) type Key = (String, String);

/// The message ids being answered now.
#[derive(Debug, Default)]
pub(crate) struct ReplyTurns {
    pub(crate) turns: Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>,
}

/// The turn to answer one message id; dropping it lets a waiting copy in.
#[derive(Debug)]
pub(crate) struct ReplyTurn {
    pub(crate) _guard: OwnedMutexGuard<()>,
}

impl ReplyTurns {
    /// Message ids being answered or waited for (the others are forgotten first).
    pub(crate) fn held(&self) -> usize {
        let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
        turns.retain(|_, l| Arc::strong_count(l) > 1);
        turns.len()
    }

    pub(crate) async fn take(
        &self,
        client: &str,
        message: &str,
        within: Duration,
    ) -> Result<ReplyTurn, HostError> {
        let lock = {
            let mut turns = self.turns.lock().unwrap_or_else(PoisonError::into_inner);
            // Forget ids nobody is answering or waiting for.
            turns.retain(|_, l| Arc::strong_count(l) > 1);
            Arc::clone(turns.entry((client.to_owned(), message.to_owned())).or_default())
        };
        match tokio::time::timeout(within, lock.lock_owned()).await {
            Ok(guard) => Ok(ReplyTurn { _guard: guard }),
            Err(_) => Err(HostError::Invalid(format!(
                "message {message} is still being answered after {} s; send it again later (it will not run twice)",
                within.as_secs()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_copy_waits_for_the_first_and_other_ids_do_not() {
        let turns = ReplyTurns::default();
        let first = turns.take("c", "m1", Duration::from_secs(5)).await.unwrap();
        // Another id, or the same id of another client, is answered at once.
        let _other = turns.take("c", "m2", Duration::from_millis(50)).await.unwrap();
        let _other_client = turns.take("d", "m1", Duration::from_millis(50)).await.unwrap();
        // The same id waits, and says so when it gives up.
        let err = turns.take("c", "m1", Duration::from_millis(50)).await.unwrap_err();
        assert!(err.to_string().contains("still being answered"), "{err}");
        drop(first);
        let _again = turns.take("c", "m1", Duration::from_millis(50)).await.unwrap();
    }

    #[tokio::test]
    async fn finished_ids_are_forgotten() {
        let turns = ReplyTurns::default();
        for i in 0..100 {
            drop(turns.take("c", &format!("m{i}"), Duration::from_secs(1)).await.unwrap());
        }
        let _last = turns.take("c", "x", Duration::from_secs(1)).await.unwrap();
        assert_eq!(turns.turns.lock().unwrap().len(), 1);
    }
}
