//! Web Push from the host against a mock push service (`nucleic_testkit::mock_push`) that
//! checks the VAPID signature and decrypts with the subscription's keys: a session needing a
//! person reaches every subscribed device with its id alone; expired subscriptions are dropped;
//! a service that is down gets a bounded number of tries; quiet hours hold pushes back.

use std::time::Duration;

use nucleic_host::{PushDelivery as Delivery, PushReport, PushRetryPolicy as RetryPolicy};
use nucleic_protocol::{QuietHours, SessionStatus, WebPushKeys, WebPushSubscription};
use nucleic_testkit::mock_push::{MockPushService, MockSubscription, PushMode};

use crate::support::{approve_until_turn_done, host, new_session, repo};

fn web(sub: &MockSubscription) -> WebPushSubscription {
    WebPushSubscription {
        endpoint: sub.endpoint.clone(),
        keys: WebPushKeys { p256dh: sub.p256dh.clone(), auth: sub.auth.clone() },
    }
}

/// Quiet hours that hold "now" (the two hours around the current UTC minute).
fn quiet_now() -> QuietHours {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let minute = ((now.as_secs() / 60) % 1440) as u16;
    QuietHours {
        from_minute: (minute + 1440 - 60) % 1440,
        to_minute: (minute + 60) % 1440,
        time_zone: "UTC".into(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_needing_a_person_pushes_its_id_alone_to_every_subscribed_device() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let host = host(dir.path()).await;
    let service = MockPushService::start().await.unwrap();
    let mut devices = Vec::new();
    for (name, mode, quiet) in [
        ("phone", PushMode::Accept, None),
        ("old tablet", PushMode::Gone, None),
        ("laptop", PushMode::Down, None),
        ("sleeping phone", PushMode::Accept, Some(quiet_now())),
    ] {
        let device = host.register_device(name, vec![1, 2, 3]).await.unwrap();
        let (sub, index) = service.subscribe(mode);
        host.set_push(&device.id, Some(web(&sub)), quiet).await.unwrap();
        devices.push((device.id, index));
    }
    let policy = RetryPolicy {
        attempts: 3,
        first_delay: Duration::from_millis(100),
        attempt_timeout: Duration::from_secs(2),
        deadline: Duration::from_secs(5),
    };
    let (tx, mut reports) = tokio::sync::mpsc::unbounded_channel::<PushReport>();
    let notifier = host.start_push(policy, Some(tx));

    let project = host.add_project(root.to_str().unwrap(), None, |_| {}).await.unwrap();
    let mut spec = new_session(&project.project_id, "write launch-codes.txt containing hunter2");
    spec.title = Some("Top secret migration".into());
    let session = host.new_session(spec, "test").await.unwrap();
    let worktree = host.session_summary(&session.session_id).await.unwrap().worktree.unwrap().path;

    // The first approval: one report per device outside quiet hours.
    let mut first = Vec::new();
    while first.len() < 3 {
        let r = tokio::time::timeout(Duration::from_secs(20), reports.recv())
            .await
            .expect("no push report within 20 s")
            .unwrap();
        if !first.iter().any(|f: &PushReport| f.device_id == r.device_id) {
            first.push(r);
        }
    }
    let of = |i: usize| first.iter().find(|r| r.device_id == devices[i].0).unwrap().clone();
    assert_eq!(of(0).delivery, Delivery::Delivered);
    assert_eq!(of(1).delivery, Delivery::Gone);
    assert!(matches!(of(2).delivery, Delivery::GaveUp { tries: 3, .. }), "{:?}", of(2));
    assert!(first.iter().all(|r| r.session_id == session.session_id));

    // What the push service carried, decrypted with the browser's keys: the id, nothing else.
    let got = service.wait_for(devices[0].1, 1, Duration::from_secs(5)).await;
    let plaintext = got[0].plaintext.clone().expect("decrypts with the subscription's keys");
    assert_eq!(got[0].problem, None);
    assert_eq!(got[0].vapid_subject.as_deref(), Some("mailto:push@nucleic.invalid"));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&plaintext).unwrap(),
        serde_json::json!({"v": 1, "s": session.session_id})
    );
    for secret in [
        "Top secret",
        "launch-codes",
        "hunter2",
        "Write",
        worktree.as_str(),
        root.to_str().unwrap(),
    ] {
        assert!(!plaintext.contains(secret), "{secret:?} leaked into the push: {plaintext}");
    }
    // Expired: dropped at once, never retried.
    assert_eq!(service.wait_for(devices[1].1, 1, Duration::from_secs(1)).await.len(), 1);
    assert!(!host.push_settings(&devices[1].0).await.unwrap().subscribed);
    // Down: exactly the policy's tries.
    assert_eq!(service.wait_for(devices[2].1, 3, Duration::from_secs(1)).await.len(), 3);
    // Quiet hours: nothing.
    assert!(service.received().iter().all(|r| r.subscription != devices[3].1));

    // The rest of the turn (approvals, the turn's end) pushes again, never to the dropped one.
    approve_until_turn_done(&host, &session.session_id).await;
    // The turn's end reaches the summary's status a moment after the event itself.
    let start = std::time::Instant::now();
    while host.session_summary(&session.session_id).await.unwrap().status
        != SessionStatus::AwaitingInput
    {
        assert!(start.elapsed() < Duration::from_secs(10), "the session never awaited input");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let received = service.received();
    assert!(received.iter().filter(|r| r.subscription == devices[0].1).count() >= 2);
    assert_eq!(received.iter().filter(|r| r.subscription == devices[1].1).count(), 1);
    assert!(received.iter().all(|r| r.problem.is_none()), "{received:?}");
    assert!(received.iter().all(|r| r.subscription != devices[3].1));
    let retries = received.iter().filter(|r| r.subscription == devices[2].1).count();
    assert_eq!(retries % 3, 0, "every message to the down service got exactly 3 tries");

    // Revoking the phone: no more pushes to it.
    host.revoke_device(&devices[0].0).await.unwrap();
    assert!(!host.push_settings(&devices[0].0).await.unwrap().subscribed);
    notifier.abort();
}
