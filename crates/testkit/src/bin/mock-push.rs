//! A standalone mock Web Push service (`nucleic_testkit::mock_push`) for tests outside Rust
//! (the relay's node suite): binds `127.0.0.1:0`, makes `--subscriptions N` subscriptions (as a
//! browser's push manager would, keys included) and prints one JSON line
//! `{"subscriptions": [{endpoint, p256dh, auth}, …]}`; then one JSON line per message it
//! receives, `{"received": {subscription, plaintext, problem, vapidSubject}}` — the plaintext
//! decrypted with the subscription's keys after the VAPID signature was checked — until killed.

use std::process::ExitCode;
use std::time::Duration;

use nucleic_testkit::mock_push::{MockPushService, PushMode};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let count = match args.as_slice() {
        [flag, n] if flag == "--subscriptions" => n.parse::<usize>().ok().filter(|n| *n <= 100),
        _ => None,
    };
    let Some(count) = count else {
        eprintln!(
            "usage: mock-push --subscriptions N   (N ≤ 100; prints them, serves until killed)"
        );
        return ExitCode::from(2);
    };
    let service = match MockPushService::start().await {
        Ok(service) => service,
        Err(e) => {
            eprintln!("mock-push: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let subscriptions: Vec<_> = (0..count)
        .map(|_| {
            let (sub, _) = service.subscribe(PushMode::Accept);
            serde_json::json!({ "endpoint": sub.endpoint, "p256dh": sub.p256dh, "auth": sub.auth })
        })
        .collect();
    println!("{}", serde_json::json!({ "subscriptions": subscriptions }));
    let report = async {
        let mut shown = 0;
        loop {
            for r in service.received().iter().skip(shown) {
                let received = serde_json::json!({ "received": {
                    "subscription": r.subscription, "plaintext": r.plaintext,
                    "problem": r.problem, "vapidSubject": r.vapid_subject,
                }});
                println!("{received}");
                shown += 1;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        stopped = nucleic_testkit::standalone::until_stopped() => {
            if let Err(e) = stopped {
                eprintln!("mock-push: cannot watch for SIGINT/SIGTERM: {e}");
                return ExitCode::FAILURE;
            }
        }
        () = report => {}
    }
    ExitCode::SUCCESS
}
