//! Catching up 100k events from a cursor, live and replayed.

#![allow(unused_imports)]

use std::collections::HashMap;
use std::error::Error;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nucleic_host::{AgentPaths, Host, HostConfig, Limits};
use nucleic_protocol::{
    Backend, ClientMessage, EventKind, HostMessage, NewSession, PROTOCOL_VERSION, Verbosity,
};
use nucleic_server::{AppState, load_or_create_token};
use serde_json::Value;

use super::*;

// ----- 3. catch-up --------------------------------------------------------------------------

/// The 100k-event session, as part 3 left it.
#[derive(Debug)]
pub(crate) struct CatchUpSession {
    pub(crate) id: String,
    pub(crate) transcript: PathBuf,
    /// A correctness failure found on the live path, reported once every figure is out.
    pub(crate) failure: Option<String>,
}

/// Part 3 on the live daemon: writes the transcript, then catches up from seq 1 while the
/// session is live and idle.
pub(crate) async fn catch_up_live(
    daemon: &Daemon,
    home: &Path,
    root: &Path,
) -> Res<CatchUpSession> {
    let host = &daemon.host;
    let target = env_usize("HOST_BENCH_EVENTS", 100_000) as u64;
    println!("\n== 3. catch-up of a {target}-event transcript from a cursor ==");
    let known = host.list_projects().await?.into_iter().find(|p| Path::new(&p.root) == root);
    let project = match known {
        Some(p) => p,
        None => {
            host.add_project(&root.to_string_lossy(), Some("repo-small".into()), |_| {}).await?
        }
    };
    let s = host.new_session(sim_session(&project.project_id, "say hi"), "bench").await?;
    let id = s.session_id;
    let mut last = wait_turns(host, &id, 1).await?;
    // Drive the agent: 1,000 tool calls per turn (about 6,000 events), until the target.
    let writes: Vec<String> =
        (0..1000).map(|i| format!("write c{i}.txt containing catch-up line {i}")).collect();
    let prompt = writes.join(" then ");
    let mut events = host.subscribe(&id, last + 1).await?;
    let t = Instant::now();
    let mut turns = 0;
    while last < target {
        host.send_input(&id, &prompt).await?;
        turns += 1;
        loop {
            let event = tokio::time::timeout(STALL, events.next())
                .await
                .map_err(|_| "catch-up session stalled")??
                .ok_or("catch-up session ended")?;
            if event.seq != last + 1 {
                return Err(
                    format!("in-process stream: expected {}, got {}", last + 1, event.seq).into()
                );
            }
            last = event.seq;
            if matches!(event.kind, EventKind::TurnCompleted(_)) {
                break;
            }
        }
    }
    let generated = t.elapsed();
    drop(events);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let path = transcript_path(home, &id);
    let last = transcript_last_seq(&path)?;
    let size = std::fs::metadata(&path)?.len();
    println!(
        "  wrote {last} events ({:.1} MB, {:.0} B/event) in {turns} turns, {:.1} s: one flat-out session = {:.0} events/s (agent + writer + catalog follower)",
        size as f64 / 1e6,
        size as f64 / last as f64,
        generated.as_secs_f64(),
        last as f64 / generated.as_secs_f64()
    );

    // Live and idle: everything is on disk, nothing new comes on the bus.
    let patience = Duration::from_secs(5);
    let mut failure = None;
    let (got, elapsed) = read_in_process(host, &id, 1, last, patience).await?;
    if got < last {
        let message = format!(
            "catch-up from seq 1 of a live, idle session delivered {got} of {last} events, then nothing for {} s",
            patience.as_secs()
        );
        println!("  live, idle session, in-process from 1: FAIL — {message}");
        failure = Some(message);
    } else {
        println!(
            "  live, idle session, in-process from 1: {last} events in {:.3} s = {:.0} events/s",
            elapsed.as_secs_f64(),
            last as f64 / elapsed.as_secs_f64()
        );
        let (addr, token, key) = (daemon.addr, daemon.token.clone(), id.clone());
        let elapsed = join(client_thread(move || ws_catch_up(addr, token, key, 1, last))).await?;
        println!(
            "  live, idle session, WebSocket from 1: {last} events in {:.3} s = {:.0} events/s",
            elapsed.as_secs_f64(),
            last as f64 / elapsed.as_secs_f64()
        );
    }
    Ok(CatchUpSession { id, transcript: path, failure })
}

/// Part 3 on a restarted daemon, where the session is no longer live and its transcript is
/// replayed: WebSocket from seq 1 and from the middle, and in-process from 1, interleaved.
pub(crate) async fn catch_up_replay(daemon: &Daemon, session: &CatchUpSession) -> Res<()> {
    let (host, id) = (&daemon.host, &session.id);
    // Stopping its agent appended the end of the run.
    let last = transcript_last_seq(&session.transcript)?;
    println!(
        "  after a daemon restart (the session is no longer live; its transcript is replayed):"
    );
    let middle = last / 2;
    let rounds = 3;
    let names = ["ws from 1", "ws from middle", "in-process from 1", "one pass (floor)"];
    let mut figures: HashMap<&str, Vec<f64>> = HashMap::new();
    for round in 0..rounds {
        let mut variants = names;
        variants.rotate_left(round % names.len());
        for variant in variants {
            let (from, elapsed) = match variant {
                "one pass (floor)" => {
                    // Every line parsed once, as a catch-up with a working index would.
                    let path = session.transcript.clone();
                    let t = Instant::now();
                    let read = tokio::task::spawn_blocking(move || {
                        nucleic_store::read_transcript(&path, 1)
                    })
                    .await??;
                    if read.last_seq != last || read.events.len() as u64 != last {
                        return Err("the transcript changed".into());
                    }
                    (1, t.elapsed())
                }
                "in-process from 1" => {
                    let (got, elapsed) = read_in_process(host, id, 1, last, STALL).await?;
                    if got < last {
                        return Err(format!("replay delivered {got} of {last} events").into());
                    }
                    (1, elapsed)
                }
                v => {
                    let from = if v == "ws from 1" { 1 } else { middle };
                    let (addr, token, id) = (daemon.addr, daemon.token.clone(), id.clone());
                    let elapsed =
                        join(client_thread(move || ws_catch_up(addr, token, id, from, last)))
                            .await?;
                    (from, elapsed)
                }
            };
            let count = last - from + 1;
            figures.entry(variant).or_default().push(count as f64 / elapsed.as_secs_f64());
            println!(
                "    round {} {variant:>18}: {count} events in {:.3} s = {:.0} events/s",
                round + 1,
                elapsed.as_secs_f64(),
                count as f64 / elapsed.as_secs_f64()
            );
        }
    }
    for variant in names {
        let rates = figures.get(variant).cloned().unwrap_or_default();
        let from = if variant == "ws from middle" { middle } else { 1 };
        let secs = (last - from + 1) as f64 / median(&rates);
        println!("  {variant:>18}: {} events/s, {:.2} s", spread(&rates, 0), secs);
    }
    let rate = |name: &str| median(figures.get(name).map_or(&[][..], |v| v));
    println!(
        "  rates: WebSocket ÷ in-process {:.2}; in-process ÷ one pass {:.2}",
        rate("ws from 1") / rate("in-process from 1"),
        rate("in-process from 1") / rate("one pass (floor)")
    );
    Ok(())
}

/// Subscribes in process from `from` and reads until `last`, or until no event comes for
/// `patience`: (events delivered, time taken).
pub(crate) async fn read_in_process(
    host: &Host,
    id: &str,
    from: u64,
    last: u64,
    patience: Duration,
) -> Res<(u64, Duration)> {
    let t = Instant::now();
    let mut events = host.subscribe(id, from).await?;
    let mut next = from;
    while next <= last {
        let Ok(event) = tokio::time::timeout(patience, events.next()).await else { break };
        let event = event?.ok_or("in-process catch-up ended early")?;
        if event.seq != next {
            return Err(format!("in-process catch-up: expected {next}, got {}", event.seq).into());
        }
        next += 1;
    }
    Ok((next - from, t.elapsed()))
}

pub(crate) async fn ws_catch_up(
    addr: SocketAddr,
    token: String,
    id: String,
    from: u64,
    last: u64,
) -> Res<Duration> {
    let mut client = connect(addr, &token).await?;
    let t = Instant::now();
    let subscribe = ClientMessage::Subscribe {
        message_id: "catch-up".into(),
        session_id: id.clone(),
        from_seq: from,
        verbosity: Verbosity::Full,
    };
    send(&mut client, &subscribe).await?;
    let mut next = from;
    while next <= last {
        match recv(&mut client, STALL).await? {
            HostMessage::Event { event } => {
                if event.seq != next || event.session_id != id {
                    return Err(format!("ws catch-up: expected {next}, got {}", event.seq).into());
                }
                next += 1;
            }
            HostMessage::Error { code, message, .. } => {
                return Err(format!("ws catch-up: {code:?}: {message}").into());
            }
            _ => {}
        }
    }
    let elapsed = t.elapsed();
    client.close().await;
    Ok(elapsed)
}
