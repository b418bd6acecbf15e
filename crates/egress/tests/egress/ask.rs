//! Names off the list asked about: the connection is held until the answer, allowed ones are
//! remembered, denied and unanswered ones refused saying why, one question per destination, and
//! IP literals, `localhost` and names that lead to loopback are never let through by asking.
//! Each test runs in its own loopback-only network namespace, where the upstream listens on an
//! address of its own that is not loopback (as a server elsewhere would be).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_egress::{
    AllowList, Answer, AnswerFuture, Destination, EgressEvent, EgressRules, ProxyConfig, Question,
    Resolver,
};
use tokio::sync::{mpsc, oneshot};

use crate::support::{Proxy, Upstream, test_config};

/// The upstream's address: not loopback, so a name may lead there.
const ELSEWHERE: &str = "10.77.0.1";

/// Rules that allow nothing and put every question to the test.
struct Asking {
    questions: mpsc::UnboundedSender<(Question, oneshot::Sender<Answer>)>,
}

impl EgressRules for Asking {
    fn allows(&self, _dest: &Destination) -> bool {
        false
    }

    fn ask(&self, question: Question) -> Option<AnswerFuture> {
        let (tx, rx) = oneshot::channel();
        self.questions.send((question, tx)).unwrap();
        // A dropped answer never comes: the proxy's deadline ends the wait.
        Some(Box::pin(async move {
            match rx.await {
                Ok(answer) => answer,
                Err(_) => std::future::pending().await,
            }
        }))
    }
}

struct Setup {
    proxy: Proxy,
    questions: mpsc::UnboundedReceiver<(Question, oneshot::Sender<Answer>)>,
    upstream: Upstream,
}

impl Setup {
    fn start(ask_deadline: Duration) -> Setup {
        Setup::start_for(ask_deadline, None)
    }

    /// With process `agent` (if any) for the agent program behind the bridge.
    fn start_for(ask_deadline: Duration, agent: Option<u32>) -> Setup {
        let add = std::process::Command::new("ip")
            .args(["addr", "add", &format!("{ELSEWHERE}/32"), "dev", "lo"])
            .status()
            .unwrap();
        assert!(add.success(), "ip addr add failed");
        let upstream = Upstream::start(ELSEWHERE, 0);
        let elsewhere: IpAddr = ELSEWHERE.parse().unwrap();
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let names = Resolver::Fixed(HashMap::from([
            ("pkg.test".to_owned(), vec![elsewhere]),
            ("other.test".to_owned(), vec![elsewhere]),
            ("rebind.test".to_owned(), vec![loopback]),
        ]));
        let (tx, questions) = mpsc::unbounded_channel();
        let config = ProxyConfig { ask_deadline, ..test_config(names) };
        let proxy = Proxy::start_for(Arc::new(Asking { questions: tx }), config, agent);
        Setup { proxy, questions, upstream }
    }

    async fn question(&mut self) -> (Question, oneshot::Sender<Answer>) {
        tokio::time::timeout(Duration::from_secs(5), self.questions.recv())
            .await
            .expect("no question within 5 s")
            .unwrap()
    }

    fn get(&self, host: &str) -> String {
        format!("GET http://{host}:{}/ HTTP/1.1\r\n\r\n", self.upstream.port)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_name_is_held_until_the_answer_then_reached_and_remembered() {
    if nucleic_testkit::isolated!(
        "an_allowed_name_is_held_until_the_answer_then_reached_and_remembered"
    ) {
        return;
    }
    let mut s = Setup::start(Duration::from_secs(30));
    let request = s.get("pkg.test");
    let fetch = {
        let (port, request) = (s.proxy.port, request.clone());
        tokio::task::spawn_blocking(move || crate::support::fetch_through(port, request.as_bytes()))
    };
    let (question, answer) = s.question().await;
    assert_eq!((question.host.as_str(), question.port), ("pkg.test", s.upstream.port));
    assert_eq!((question.method.as_str(), question.deadline), ("GET", Duration::from_secs(30)));
    // Held: nothing reached the upstream before the answer.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(s.upstream.accepted(), 0);
    answer.send(Answer::Allow).unwrap();
    let got = fetch.await.unwrap();
    assert!(got.starts_with("HTTP/1.1 200 OK") && got.ends_with("hello"), "{got}");
    assert!(matches!(s.proxy.next_event().await, EgressEvent::Allowed { .. }));
    // Remembered: the next connection is not asked.
    assert!(s.proxy.ask(request.as_bytes()).await.ends_with("hello"));
    assert!(s.questions.try_recv().is_err(), "asked again");
    assert_eq!(s.upstream.accepted(), 2);
    // Another name is asked on its own.
    let other = s.get("other.test");
    let fetch = {
        let port = s.proxy.port;
        tokio::task::spawn_blocking(move || crate::support::fetch_through(port, other.as_bytes()))
    };
    let (question, answer) = s.question().await;
    assert_eq!(question.host, "other.test");
    answer.send(Answer::Deny("no".into())).unwrap();
    assert!(fetch.await.unwrap().starts_with("HTTP/1.1 403"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_name_is_refused_with_the_answers_reason_and_never_reached() {
    if nucleic_testkit::isolated!(
        "a_denied_name_is_refused_with_the_answers_reason_and_never_reached"
    ) {
        return;
    }
    let mut s = Setup::start(Duration::from_secs(30));
    let request = format!("CONNECT pkg.test:{} HTTP/1.1\r\n\r\n", s.upstream.port);
    let fetch = {
        let port = s.proxy.port;
        tokio::task::spawn_blocking(move || crate::support::fetch_through(port, request.as_bytes()))
    };
    let (question, answer) = s.question().await;
    assert_eq!(question.method, "CONNECT");
    answer.send(Answer::Deny("a person (phone) denied it".into())).unwrap();
    let got = fetch.await.unwrap();
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("a person (phone) denied it"), "{got}");
    match s.proxy.next_event().await {
        EgressEvent::Refused { host, reason, .. } => {
            assert_eq!(host, "pkg.test");
            assert!(reason.contains("denied"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.upstream.accepted(), 0);
    // A denial is remembered: a retry is refused at once, not asked again.
    let got = s.proxy.ask(s.get("pkg.test").as_bytes()).await;
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("not asked again"), "{got}");
    assert!(s.questions.try_recv().is_err(), "a denied destination was asked again");
    // "Not now" (nobody answered) is not: the next connection asks again.
    let request = s.get("other.test");
    let port = s.proxy.port;
    let ask = move |request: String| {
        tokio::task::spawn_blocking(move || crate::support::fetch_through(port, request.as_bytes()))
    };
    let fetch = ask(request.clone());
    let (_, answer) = s.question().await;
    answer.send(Answer::NotNow("nobody there".into())).unwrap();
    assert!(fetch.await.unwrap().contains("nobody there"));
    let fetch = ask(request);
    let (_, answer) = s.question().await;
    answer.send(Answer::Allow).unwrap();
    assert!(fetch.await.unwrap().ends_with("hello"));
}

#[tokio::test(flavor = "multi_thread")]
async fn at_most_max_open_questions_are_open_at_once() {
    if nucleic_testkit::isolated!("at_most_max_open_questions_are_open_at_once") {
        return;
    }
    let mut s = Setup::start(Duration::from_secs(30));
    let p = s.upstream.port;
    let held: Vec<_> = (0..nucleic_egress::MAX_OPEN)
        .map(|i| {
            let (port, request) = (s.proxy.port, format!("CONNECT n{i}.test:{p} HTTP/1.1\r\n\r\n"));
            tokio::task::spawn_blocking(move || {
                crate::support::fetch_through(port, request.as_bytes())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for _ in 0..nucleic_egress::MAX_OPEN {
        answers.push(s.question().await.1);
    }
    let got = s.proxy.ask(format!("CONNECT one-more.test:{p} HTTP/1.1\r\n\r\n").as_bytes()).await;
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("questions"), "{got}");
    assert!(s.questions.try_recv().is_err(), "one question too many");
    for answer in answers {
        answer.send(Answer::Deny("no".into())).unwrap();
    }
    for fetch in held {
        assert!(fetch.await.unwrap().starts_with("HTTP/1.1 403"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unanswered_question_times_out_and_the_connection_is_refused_saying_so() {
    if nucleic_testkit::isolated!(
        "an_unanswered_question_times_out_and_the_connection_is_refused_saying_so"
    ) {
        return;
    }
    let mut s = Setup::start(Duration::from_millis(300));
    let started = Instant::now();
    let got = s.proxy.ask(s.get("pkg.test").as_bytes()).await;
    let (_question, _never_answered) = s.question().await;
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("timed out"), "{got}");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(matches!(s.proxy.next_event().await, EgressEvent::Refused { .. }));
    assert_eq!(s.upstream.accepted(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_connections_to_one_name_share_one_question() {
    if nucleic_testkit::isolated!("concurrent_connections_to_one_name_share_one_question") {
        return;
    }
    let mut s = Setup::start(Duration::from_secs(30));
    let fetches: Vec<_> = (0..3)
        .map(|_| {
            let (port, request) = (s.proxy.port, s.get("pkg.test"));
            tokio::task::spawn_blocking(move || {
                crate::support::fetch_through(port, request.as_bytes())
            })
        })
        .collect();
    let (_, answer) = s.question().await;
    // Every connection is held on that one question.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.questions.try_recv().is_err(), "a second question for the same destination");
    answer.send(Answer::Allow).unwrap();
    for fetch in fetches {
        let got = fetch.await.unwrap();
        assert!(got.ends_with("hello"), "{got}");
    }
    assert_eq!(s.upstream.accepted(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn literals_and_localhost_are_never_asked_and_a_yes_never_leads_to_loopback() {
    if nucleic_testkit::isolated!(
        "literals_and_localhost_are_never_asked_and_a_yes_never_leads_to_loopback"
    ) {
        return;
    }
    let mut s = Setup::start(Duration::from_secs(30));
    let p = s.upstream.port;
    for request in [
        format!("CONNECT {ELSEWHERE}:{p} HTTP/1.1\r\n\r\n"),
        format!("GET http://127.0.0.1:{p}/ HTTP/1.1\r\n\r\n"),
        format!("CONNECT [::1]:{p} HTTP/1.1\r\n\r\n"),
        format!("CONNECT localhost:{p} HTTP/1.1\r\n\r\n"),
        format!("GET http://api.localhost:{p}/ HTTP/1.1\r\n\r\n"),
    ] {
        let got = s.proxy.ask(request.as_bytes()).await;
        assert!(got.starts_with("HTTP/1.1 403") && got.contains("allow-list"), "{request}: {got}");
        assert!(matches!(s.proxy.next_event().await, EgressEvent::Refused { .. }));
    }
    assert!(s.questions.try_recv().is_err(), "a literal or localhost was asked about");
    // A name may be asked, but a yes does not take it to this machine's own addresses.
    let request = format!("CONNECT rebind.test:{p} HTTP/1.1\r\n\r\n");
    let fetch = {
        let port = s.proxy.port;
        tokio::task::spawn_blocking(move || crate::support::fetch_through(port, request.as_bytes()))
    };
    let (_, answer) = s.question().await;
    answer.send(Answer::Allow).unwrap();
    let got = fetch.await.unwrap();
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("own addresses"), "{got}");
    assert_eq!(s.upstream.accepted(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_own_traffic_is_refused_unasked_and_its_commands_are_asked() {
    if nucleic_testkit::isolated!(
        "the_agents_own_traffic_is_refused_unasked_and_its_commands_are_asked"
    ) {
        return;
    }
    // This test process is the agent program: its own connection is refused without a question
    // and never reaches the upstream.
    let mut s = Setup::start_for(Duration::from_secs(30), Some(std::process::id()));
    let got = s.proxy.ask(s.get("pkg.test").as_bytes()).await;
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("background traffic"), "{got}");
    match s.proxy.next_event().await {
        EgressEvent::Refused { host, reason, .. } => {
            assert_eq!(host, "pkg.test");
            assert!(reason.contains("agent program itself"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(s.questions.try_recv().is_err(), "the agent's own traffic was asked about");
    assert_eq!(s.upstream.accepted(), 0);
    // A command it runs (a shell it started) asking for the same name is asked, and reaches it.
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{}; printf 'GET http://pkg.test:{}/ HTTP/1.1\\r\\n\\r\\n' >&3; \
         timeout 10 cat <&3",
        s.proxy.port, s.upstream.port
    );
    let command = tokio::process::Command::new("bash").args(["-c", &script]).output();
    let command = tokio::spawn(command);
    let (question, answer) = s.question().await;
    assert_eq!(question.host, "pkg.test");
    answer.send(Answer::Allow).unwrap();
    let out = command.await.unwrap().unwrap();
    let got = String::from_utf8_lossy(&out.stdout);
    assert!(got.starts_with("HTTP/1.1 200 OK") && got.ends_with("hello"), "{got}");
    assert_eq!(s.upstream.accepted(), 1);
}

#[test]
fn no_rules_ask_unless_they_say_so() {
    let list = AllowList::default();
    let question = Question {
        host: "pkg.test".into(),
        port: 443,
        method: "CONNECT".into(),
        deadline: Duration::from_secs(1),
    };
    assert!(list.ask(question).is_none());
}
