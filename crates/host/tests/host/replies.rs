//! Remembered replies across the typed-result change: a request resent after an upgrade, whose
//! reply an earlier host remembered untagged, is still never carried out a second time.

use nucleic_host::Host;
use nucleic_host::api::{Client, Principal};
use nucleic_protocol::{ClientMessage, HostMessage, Intent, IntentResult};

use crate::support::{config, repo};

fn add_project(message_id: &str, path: &str) -> ClientMessage {
    ClientMessage::Intent { message_id: message_id.into(), intent: Intent::add_project(path) }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_remembered_untagged_by_an_older_host_is_not_carried_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path());
    let path = root.to_str().unwrap();
    let cfg = config(dir.path());
    let host = Host::open(cfg.clone()).await.unwrap();
    let client = Client::new("tab", Principal::Token);

    // Feature: a new id is carried out, its result tagged, and a resend answered the same.
    let fresh = host.answer(&client, add_project("m1", path)).await;
    let HostMessage::Ack { result: Some(IntentResult::Project(project)), .. } = &fresh else {
        panic!("{fresh:?}")
    };
    assert_eq!(host.answer(&client, add_project("m1", path)).await, fresh);
    host.remove_project(&project.project_id).await.unwrap();

    // What an earlier host remembered for `m2`: an untagged result.
    let catalog = nucleic_catalog::Catalog::open(&cfg.catalog_path()).unwrap();
    let old = r#"{"type":"ack","messageID":"m2","result":{"projectID":"p-old","name":"repo"}}"#;
    catalog.remember_response(&client.id, "m2", old).unwrap();
    drop(catalog);
    // Resent now: acknowledged (it was done), not done again — the project stays removed.
    let again = host.answer(&client, add_project("m2", path)).await;
    assert_eq!(again, HostMessage::Ack { message_id: "m2".into(), result: None });
    assert!(host.list_projects().await.unwrap().is_empty(), "carried out a second time");
    host.shutdown(std::time::Duration::from_secs(1), std::time::Duration::from_secs(5)).await;
}
