//! The egress proxies being served, by session, and each one's live rules.

use nucleic_egress::{AllowList, Answer, AnswerFuture, Destination, EgressRules, Question};
use std::sync::{RwLock, Weak};

use crate::policy::fetch_grants::FetchGrants;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::task::AbortHandle;

/// The proxies being served, by session.
#[derive(Debug, Default)]
pub(crate) struct EgressProxies {
    pub(crate) running: Mutex<HashMap<String, Served>>,
    /// Held while an "always" adds to a project's sandbox (a read, then a write).
    pub(crate) always: tokio::sync::Mutex<()>,
    /// Names each session's allowed fetches granted (shared by its proxy and its policy).
    grants: Mutex<HashMap<String, Arc<FetchGrants>>>,
}

#[derive(Debug)]
pub(crate) struct Served {
    pub(crate) proxy: AbortHandle,
    pub(crate) relay: AbortHandle,
    pub(crate) rules: Shared,
}

impl EgressProxies {
    /// Sessions with a proxy served.
    pub(crate) fn held(&self) -> usize {
        self.running.lock().map_or(0, |r| r.len())
    }

    /// Session `id`'s fetch grants (made at the first call: its policy and its proxy may start
    /// in either order).
    pub(crate) fn grants_for(&self, id: &str) -> Arc<FetchGrants> {
        match self.grants.lock() {
            Ok(mut grants) => grants.entry(id.to_owned()).or_default().clone(),
            Err(_) => Arc::new(FetchGrants::default()),
        }
    }

    /// Forgets session `id`'s fetch grants (its agent stopped).
    pub(crate) fn drop_grants(&self, id: &str) {
        if let Ok(mut grants) = self.grants.lock() {
            grants.remove(id);
        }
    }

    /// The rules of every served proxy, by session.
    pub(crate) fn served_rules(&self) -> Vec<(String, Shared)> {
        self.running.lock().map_or(Vec::new(), |r| {
            r.iter().map(|(id, served)| (id.clone(), served.rules.clone())).collect()
        })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.proxy.abort();
        self.relay.abort();
    }
}

/// What asks a person about an egress destination (the host's context): the rules hold it
/// weakly, so a proxy never keeps a stopped host alive.
pub(crate) trait AsksEgress: Send + Sync + std::fmt::Debug {
    /// Puts `question` to session `session` and resolves with the answer.
    fn ask(self: Arc<Self>, session: String, question: Question) -> AnswerFuture;
}

/// One session's egress rules: its allow-list (changed live by an "always"), and its questions
/// put to the session as approvals.
#[derive(Debug)]
pub(crate) struct SessionRules {
    pub(crate) list: RwLock<AllowList>,
    /// Names allowed fetches of the session granted for a while.
    grants: Arc<FetchGrants>,
    session: String,
    host: Weak<dyn AsksEgress>,
}

impl SessionRules {
    pub(crate) fn new(
        list: AllowList,
        grants: Arc<FetchGrants>,
        session: &str,
        host: Weak<dyn AsksEgress>,
    ) -> SessionRules {
        SessionRules { list: RwLock::new(list), grants, session: session.to_owned(), host }
    }

    /// Adds `entry` to the live list (a poisoned lock or a bad entry changes nothing).
    pub(crate) fn add(&self, entry: &str) {
        if let Ok(mut list) = self.list.write()
            && let Ok(more) = AllowList::parse(list.entries().into_iter().chain([entry.to_owned()]))
        {
            *list = more;
        }
    }
}

impl EgressRules for SessionRules {
    fn allows(&self, dest: &Destination) -> bool {
        self.list.read().is_ok_and(|l| l.permits(dest))
    }

    fn grants_program(&self, dest: &Destination) -> bool {
        self.grants.permits(dest)
    }

    fn ask(&self, question: Question) -> Option<AnswerFuture> {
        let (host, session) = (self.host.clone(), self.session.clone());
        match host.upgrade() {
            Some(host) => Some(host.ask(session, question)),
            None => Some(Box::pin(async { Answer::NotNow("the host is stopping".into()) })),
        }
    }
}

/// The rules of a served proxy, as the host keeps them.
pub(crate) type Shared = Arc<SessionRules>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing to ask: the rules' list alone is under test.
    #[derive(Debug)]
    struct NoOne;

    impl AsksEgress for NoOne {
        fn ask(self: Arc<Self>, _: String, _: Question) -> AnswerFuture {
            Box::pin(async { Answer::NotNow("no one to ask".into()) })
        }
    }

    #[test]
    fn an_added_entry_is_allowed_at_once() {
        let rules = SessionRules::new(
            AllowList::default(),
            Arc::default(),
            "s",
            Weak::<NoOne>::new() as Weak<dyn AsksEgress>,
        );
        let dest = Destination::parse("pkg.test:8443", None).unwrap();
        assert!(!rules.allows(&dest));
        rules.add("pkg.test:8443");
        assert!(rules.allows(&dest));
    }
}
