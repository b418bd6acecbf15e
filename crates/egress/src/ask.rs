//! Asking about a name that is not on the allow-list: the connection is held while the rules'
//! asker (the host: a person) answers, every connection to the same destination waits on one
//! question, an allowed or denied destination is remembered for the proxy's life (a retry is not
//! asked again), at most [`MAX_OPEN`] questions are open at once, and every wait ends at its
//! deadline.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

use crate::allow::Destination;
use crate::proxy::EgressRules;

/// A destination the proxy asks about: a name (never an IP literal, never `localhost`) a
/// request named that the rules do not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub host: String,
    pub port: u16,
    /// The request's method (`CONNECT`, `GET`, …) of the connection that asked first.
    pub method: String,
    /// How long the proxy holds the connection for an answer: an answer later than this is not
    /// waited for (the connection is refused, saying it timed out).
    pub deadline: Duration,
}

/// The answer to a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Connect (and remember: the next connection to it is not asked).
    Allow,
    /// Refuse, saying why (the 403's body and the refusal's reason), and remember: the next
    /// connection to it is refused without asking.
    Deny(String),
    /// Refuse this time, saying why (nobody answered, the session ended); the next connection
    /// asks again.
    NotNow(String),
}

/// The answer the asker will give.
pub type AnswerFuture = Pin<Box<dyn Future<Output = Answer> + Send>>;

/// Whether `dest` may be asked about at all: a name, not an IP literal (those are reached only
/// when listed exactly), and not `localhost` or under `.localhost` (always this machine).
pub fn askable(dest: &Destination) -> bool {
    dest.ip().is_none() && dest.host != "localhost" && !dest.host.ends_with(".localhost")
}

/// The most questions one proxy has open at once; a connection to yet another name is refused.
pub const MAX_OPEN: usize = 16;

/// After the question's own deadline, how much longer a waiting connection gives the asker to
/// say it expired before the proxy refuses on its own.
const GRACE: Duration = Duration::from_secs(2);

/// The questions of one proxy: open ones (shared) and destinations allowed by an answer.
#[derive(Debug, Default)]
pub(crate) struct Asked {
    open: Mutex<HashMap<String, watch::Receiver<Option<Answer>>>>,
    allowed: Mutex<HashSet<String>>,
    /// Denied destinations, with why.
    denied: Mutex<HashMap<String, String>>,
}

/// What a connection does about its destination.
enum Turn {
    /// Allowed by an earlier answer.
    Allowed,
    /// Not on the list and not to be asked (why, when it is not just that).
    Refused(Option<String>),
    /// Another connection asked: wait for its answer.
    Wait(watch::Receiver<Option<Answer>>),
    /// This connection asks.
    Ask(AnswerFuture, watch::Sender<Option<Answer>>),
}

impl Asked {
    /// Whether `dest` (not allowed by `rules`) may be reached: `Ok` when an answer allows it,
    /// else the refusal's reason.
    pub(crate) async fn decide(
        &self,
        rules: &dyn EgressRules,
        dest: &Destination,
        method: &str,
        deadline: Duration,
    ) -> Result<(), String> {
        let not_listed = || format!("{dest} is not on this session's egress allow-list");
        let key = dest.to_string();
        match self.turn(rules, dest, &key, method, deadline) {
            Turn::Allowed => Ok(()),
            Turn::Refused(why) => Err(why.unwrap_or_else(not_listed)),
            Turn::Wait(mut answer) => {
                let waited =
                    tokio::time::timeout(deadline + GRACE, answer.wait_for(Option::is_some)).await;
                match waited {
                    Ok(Ok(answer)) => verdict(answer.clone()),
                    Ok(Err(_)) => Err(format!("{dest} was asked, but the asker went away")),
                    Err(_) => Err(timed_out(dest, deadline)),
                }
            }
            Turn::Ask(question, tell) => {
                let answer = tokio::time::timeout(deadline + GRACE, question)
                    .await
                    .unwrap_or_else(|_| Answer::NotNow(timed_out(dest, deadline)));
                match &answer {
                    Answer::Allow => {
                        if let Ok(mut allowed) = self.allowed.lock() {
                            allowed.insert(key.clone());
                        }
                    }
                    Answer::Deny(why) => {
                        if let Ok(mut denied) = self.denied.lock() {
                            denied.insert(key.clone(), why.clone());
                        }
                    }
                    Answer::NotNow(_) => {}
                }
                if let Ok(mut open) = self.open.lock() {
                    open.remove(&key);
                }
                let _ = tell.send(Some(answer.clone()));
                verdict(Some(answer))
            }
        }
    }

    fn turn(
        &self,
        rules: &dyn EgressRules,
        dest: &Destination,
        key: &str,
        method: &str,
        deadline: Duration,
    ) -> Turn {
        if self.allowed.lock().is_ok_and(|a| a.contains(key)) {
            return Turn::Allowed;
        }
        if !askable(dest) {
            return Turn::Refused(None);
        }
        if let Some(why) = self.denied.lock().ok().and_then(|d| d.get(key).cloned()) {
            return Turn::Refused(Some(format!("{why} (denied earlier: not asked again)")));
        }
        // A poisoned lock asks nothing: refused.
        let Ok(mut open) = self.open.lock() else { return Turn::Refused(None) };
        if let Some(answer) = open.get(key) {
            return Turn::Wait(answer.clone());
        }
        if open.len() >= MAX_OPEN {
            return Turn::Refused(Some(format!(
                "{dest} is not on this session's egress allow-list, and {MAX_OPEN} questions \
                 are already open: not asked"
            )));
        }
        let question = Question {
            host: dest.host.clone(),
            port: dest.port,
            method: method.to_owned(),
            deadline,
        };
        let Some(future) = rules.ask(question) else { return Turn::Refused(None) };
        let (tell, answer) = watch::channel(None);
        open.insert(key.to_owned(), answer);
        Turn::Ask(future, tell)
    }
}

fn verdict(answer: Option<Answer>) -> Result<(), String> {
    match answer {
        Some(Answer::Allow) => Ok(()),
        Some(Answer::Deny(why) | Answer::NotNow(why)) => Err(why),
        None => Err("no answer".into()),
    }
}

fn timed_out(dest: &Destination, deadline: Duration) -> String {
    format!("{dest} was asked, but no answer came within {} s (timed out)", deadline.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_other_than_localhost_are_askable() {
        let at = |t: &str| Destination::parse(t, None).unwrap();
        assert!(askable(&at("pkg.example:443")));
        for never in ["127.0.0.1:80", "[::1]:443", "10.0.0.1:443", "localhost:80", "a.localhost:80"]
        {
            assert!(!askable(&at(never)), "{never}");
        }
    }
}
