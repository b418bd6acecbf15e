//! The device streams of one relay connection: each device's handshake (`DeviceStreams`), the
//! paired devices it accepts (the catalog's channel devices, less revoked ones), and one
//! sync-protocol connection per open channel — the same `connection::run` as `/ws`, fed and
//! drained through `wire`. Revoking a device refuses its next handshake at once and closes its
//! open channels as `/ws` does: its connection sends the replies already under way, then close
//! 4401 inside the channel, then the stream is closed at the relay — cut regardless after
//! [`REVOKE_GRACE`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_channel::relay::RelayFrame;
use nucleic_channel::streams::{DeviceRegistry, DeviceStreams, StreamEvent};
use nucleic_channel::{PairingSecret, PublicKey};
use nucleic_host::{ChannelDevice, Revocation};
use tokio::sync::{broadcast, mpsc, watch};

use super::Remote;
use super::framing;
use crate::AppState;
use crate::connection::{self, Auth, CLOSE_UNAUTHORIZED};
use crate::dispatch::Principal;
use crate::wire::{self, Broken, InFrame, OutFrame};

/// Device streams open at once over one relay connection (the relay caps devices per room too).
const MAX_STREAMS: usize = 32;
/// Frames from one device waiting for its connection; more closes the stream.
const INBOUND_QUEUE: usize = 64;
/// Ping the relay this often; a relay silent for [`RELAY_IDLE`] is given up on.
const RELAY_PING: Duration = Duration::from_secs(20);
const RELAY_IDLE: Duration = Duration::from_secs(60);
/// How long a revoked device's connection has to send the replies under way and its own close
/// 4401 (it waits up to 2 s for them) before its stream is cut from here.
const REVOKE_GRACE: Duration = Duration::from_secs(3);
const STOPPED: &str = "the host stopped";

/// What carries the relay's frames (`relay/src/wire.ts`): the relay connection itself, or one
/// direct connection on the LAN listener presented as a single stream (`lan`).
pub(super) trait Carrier: Send {
    /// The next frame (`None`: nothing to act on, e.g. a pong); `Err` with why it ended.
    fn next(&mut self) -> impl Future<Output = Result<Option<Vec<u8>>, String>> + Send;
    fn send(&mut self, frame: Vec<u8>) -> impl Future<Output = Result<(), String>> + Send;
    fn ping(&mut self) -> impl Future<Output = Result<(), String>> + Send;
    fn close(&mut self) -> impl Future<Output = ()> + Send;
}

/// One device's connection.
struct Conn {
    device_id: String,
    input: mpsc::Sender<InFrame>,
    /// Set when the device was revoked: the stream is cut at this instant unless its connection
    /// closed it first.
    cut_at: Option<Instant>,
}

/// The devices served over one relay connection.
pub(super) struct Devices {
    remote: Arc<Remote>,
    state: AppState,
    streams: DeviceStreams,
    /// Paired, unrevoked devices by key.
    known: HashMap<PublicKey, ChannelDevice>,
    conns: HashMap<u32, Conn>,
    out_tx: mpsc::Sender<(u32, OutFrame)>,
    out_rx: mpsc::Receiver<(u32, OutFrame)>,
    /// Whether these are the relay connection's devices (else one direct LAN connection).
    through_relay: bool,
}

/// What the handshakes ask of the host.
struct Registry<'a> {
    remote: &'a Remote,
    known: &'a HashMap<PublicKey, ChannelDevice>,
    /// Devices that finished pairing during this step, with the name to record.
    paired: Vec<(PublicKey, String)>,
}

impl DeviceRegistry for Registry<'_> {
    fn pairing_secret(&self) -> Option<PairingSecret> {
        self.remote.pairing.secret()
    }

    fn complete_pairing(&mut self, device: &PublicKey, secret: &PairingSecret) -> bool {
        if self.known.contains_key(device) {
            return false;
        }
        match self.remote.pairing.spend(secret) {
            Some(name) => {
                self.paired.push((*device, name));
                true
            }
            None => false,
        }
    }

    fn is_paired(&self, device: &PublicKey) -> bool {
        self.known.contains_key(device)
    }
}

/// The carrier of a device's connection: frames the relay loop hands over.
struct ChannelSource(mpsc::Receiver<InFrame>);

impl wire::Source for ChannelSource {
    async fn next(&mut self) -> Option<InFrame> {
        self.0.recv().await
    }
}

/// Frames back to the relay loop, tagged with the device's stream.
struct ChannelSink {
    stream: u32,
    tx: mpsc::Sender<(u32, OutFrame)>,
}

impl wire::Sink for ChannelSink {
    async fn send(&mut self, frame: OutFrame) -> Result<(), Broken> {
        self.tx.send((self.stream, frame)).await.map_err(|_| Broken)
    }
}

fn known_by_key(devices: Vec<ChannelDevice>) -> HashMap<PublicKey, ChannelDevice> {
    devices.into_iter().filter_map(|d| Some((PublicKey::from_slice(&d.key).ok()?, d))).collect()
}

impl Devices {
    pub(super) async fn new(
        remote: &Arc<Remote>,
        state: &AppState,
        through_relay: bool,
    ) -> Devices {
        let known = known_by_key(state.host.channel_devices().await.unwrap_or_default());
        let (out_tx, out_rx) = mpsc::channel(256);
        Devices {
            remote: Arc::clone(remote),
            state: state.clone(),
            streams: DeviceStreams::new(
                remote.identity.noise.clone(),
                &remote.host_id(),
                MAX_STREAMS,
            ),
            known,
            conns: HashMap::new(),
            out_tx,
            out_rx,
            through_relay,
        }
    }

    /// Serves the devices until the relay connection ends (the reason) or `stop`.
    pub(super) async fn serve(
        &mut self,
        mut socket: impl Carrier,
        stop: &mut watch::Receiver<bool>,
    ) -> String {
        let mut revocations = self.state.host.revocations();
        let mut ping = tokio::time::interval(RELAY_PING);
        ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut heard = Instant::now();
        let why = loop {
            // Revocations first: a revoked device's connection closes it (4401) after hearing of
            // the same revocation, and the device's next handshake must find its key gone.
            if let Err(why) = self.take_revocations(&mut revocations).await {
                break why;
            }
            let cut_at = self.conns.values().filter_map(|c| c.cut_at).min();
            tokio::select! {
                frame = socket.next() => {
                    heard = Instant::now();
                    let bytes = match frame {
                        Ok(Some(bytes)) => bytes,
                        Ok(None) => continue,
                        Err(why) => break why,
                    };
                    if let Err(why) = self.on_relay_frame(&bytes, &mut socket).await {
                        break why;
                    }
                }
                Some((stream, frame)) = self.out_rx.recv() => {
                    if let Err(why) = self.on_outgoing(stream, frame, &mut socket).await {
                        break why;
                    }
                }
                revocation = revocations.recv() => {
                    if let Err(why) = self.on_revocation(revocation).await {
                        break why;
                    }
                }
                () = tokio::time::sleep_until(cut_at.unwrap_or_else(Instant::now).into()), if cut_at.is_some() => {
                    if let Err(why) = self.cut_revoked(&mut socket).await {
                        break why;
                    }
                }
                _ = ping.tick() => {
                    if heard.elapsed() > RELAY_IDLE {
                        break format!("nothing from the relay for {} s", RELAY_IDLE.as_secs());
                    }
                    if let Err(why) = socket.ping().await {
                        break why;
                    }
                }
                () = super::stopped(stop) => break STOPPED.to_owned(),
            }
        };
        if why == STOPPED {
            let streams: Vec<u32> = self.conns.keys().copied().collect();
            for stream in streams {
                let _ = self.close(stream, 1001, "the host is stopping", &mut socket).await;
            }
            socket.close().await;
        }
        // Every device's connection ends with the relay connection (their input closes).
        self.conns.clear();
        why
    }

    async fn send_relay(socket: &mut impl Carrier, frames: Vec<Vec<u8>>) -> Result<(), String> {
        for frame in frames {
            socket.send(frame).await?;
        }
        Ok(())
    }

    async fn on_relay_frame(
        &mut self,
        bytes: &[u8],
        socket: &mut impl Carrier,
    ) -> Result<(), String> {
        if matches!(RelayFrame::parse(bytes), Ok(RelayFrame::Challenge(_) | RelayFrame::Ready)) {
            return Ok(());
        }
        let mut registry =
            Registry { remote: &self.remote, known: &self.known, paired: Vec::new() };
        let step = self
            .streams
            .on_relay_frame(bytes, &mut registry)
            .map_err(|e| format!("the relay sent a malformed frame: {e}"))?;
        let paired = registry.paired;
        Self::send_relay(socket, step.to_relay).await?;
        for event in step.events {
            match event {
                StreamEvent::Paired { stream, device } => {
                    let name = paired
                        .iter()
                        .find(|(k, _)| *k == device)
                        .map_or_else(|| "paired device".to_owned(), |(_, n)| n.clone());
                    match self.state.host.register_device(&name, device.as_bytes().to_vec()).await {
                        Ok(row) => {
                            let d = ChannelDevice {
                                id: row.id,
                                name: row.name,
                                key: device.as_bytes().to_vec(),
                            };
                            self.known.insert(device, d.clone());
                            self.open(stream, d);
                        }
                        Err(_) => {
                            Self::send_relay(socket, vec![self.streams.close(stream)]).await?;
                        }
                    }
                }
                StreamEvent::Connected { stream, device } => match self.known.get(&device).cloned()
                {
                    Some(d) => {
                        let _ = self.state.host.touch_device(&d.id).await;
                        self.open(stream, d);
                    }
                    None => Self::send_relay(socket, vec![self.streams.close(stream)]).await?,
                },
                StreamEvent::Message { stream, message, .. } => {
                    let Some(conn) = self.conns.get(&stream) else { continue };
                    if conn.cut_at.is_some() {
                        // Revoked: nothing more reaches its connection, which only finishes
                        // the replies under way.
                        continue;
                    }
                    let refused = match framing::decode(&message) {
                        None => true,
                        Some(frame) => conn.input.try_send(frame).is_err(),
                    };
                    if refused {
                        // Malformed, or flooding faster than its connection reads.
                        self.conns.remove(&stream);
                        Self::send_relay(socket, vec![self.streams.close(stream)]).await?;
                    }
                }
                StreamEvent::Closed { stream, .. } => {
                    self.conns.remove(&stream);
                }
            }
        }
        self.note_count();
        Ok(())
    }

    /// The relay connection's open channels, for `nucleic doctor` (a LAN connection's one
    /// channel is not the relay's).
    fn note_count(&self) {
        if self.through_relay {
            self.remote.status.update(|s| s.devices = self.conns.len());
        }
    }

    /// Starts the sync-protocol connection of an open channel.
    fn open(&mut self, stream: u32, device: ChannelDevice) {
        let (input, rx) = mpsc::channel(INBOUND_QUEUE);
        let principal = Principal::Device { id: device.id.clone(), name: device.name };
        tokio::spawn(connection::run(
            ChannelSource(rx),
            ChannelSink { stream, tx: self.out_tx.clone() },
            self.state.clone(),
            Auth::Channel(principal),
        ));
        self.conns.insert(stream, Conn { device_id: device.id, input, cut_at: None });
    }

    /// A frame of a device's connection: sealed into its channel; a close also ends the stream.
    async fn on_outgoing(
        &mut self,
        stream: u32,
        frame: OutFrame,
        socket: &mut impl Carrier,
    ) -> Result<(), String> {
        if !self.conns.contains_key(&stream) {
            return Ok(());
        }
        let closing = matches!(frame, OutFrame::Close { .. });
        match self.streams.send(stream, &framing::encode(&frame)) {
            Ok(frames) => Self::send_relay(socket, frames).await?,
            Err(_) => return self.drop_stream(stream, socket).await,
        }
        if closing {
            return self.drop_stream(stream, socket).await;
        }
        Ok(())
    }

    async fn drop_stream(&mut self, stream: u32, socket: &mut impl Carrier) -> Result<(), String> {
        self.conns.remove(&stream);
        // Closed by the host (idle, malformed, revoked): doctor's count drops now, not at the
        // relay's next frame.
        self.note_count();
        Self::send_relay(socket, vec![self.streams.close(stream)]).await
    }

    /// Tells the device why (inside its channel), then closes its stream at the relay.
    async fn close(
        &mut self,
        stream: u32,
        code: u16,
        reason: &str,
        socket: &mut impl Carrier,
    ) -> Result<(), String> {
        let message = framing::encode(&OutFrame::Close { code, reason: reason.to_owned() });
        if let Ok(frames) = self.streams.send(stream, &message) {
            Self::send_relay(socket, frames).await?;
        }
        self.drop_stream(stream, socket).await
    }

    /// A revocation: the device's key is refused from now on, and nothing more it sends reaches
    /// its connections; its open channels are left to those connections to close (the replies
    /// under way, then 4401) until [`REVOKE_GRACE`].
    async fn on_revocation(
        &mut self,
        revocation: Result<Revocation, broadcast::error::RecvError>,
    ) -> Result<(), String> {
        match revocation {
            Ok(Revocation::Device(id)) => self.known.retain(|_, d| d.id != id),
            Ok(Revocation::All) => self.known.clear(),
            // No MCP client and no chat user's connection comes through the relay.
            Ok(Revocation::Mcp(_) | Revocation::Person(_)) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => {
                self.known =
                    known_by_key(self.state.host.channel_devices().await.unwrap_or_default());
            }
            Err(broadcast::error::RecvError::Closed) => return Err("the host is gone".to_owned()),
        }
        let ids: std::collections::HashSet<&str> =
            self.known.values().map(|d| d.id.as_str()).collect();
        let cut_at = Instant::now() + REVOKE_GRACE;
        for conn in self.conns.values_mut() {
            if !ids.contains(conn.device_id.as_str()) && conn.cut_at.is_none() {
                conn.cut_at = Some(cut_at);
            }
        }
        Ok(())
    }

    /// Every revocation already announced, before anything else is handled.
    async fn take_revocations(
        &mut self,
        revocations: &mut broadcast::Receiver<Revocation>,
    ) -> Result<(), String> {
        loop {
            let next = match revocations.try_recv() {
                Ok(r) => Ok(r),
                Err(broadcast::error::TryRecvError::Empty) => return Ok(()),
                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                    Err(broadcast::error::RecvError::Lagged(n))
                }
                Err(broadcast::error::TryRecvError::Closed) => {
                    Err(broadcast::error::RecvError::Closed)
                }
            };
            self.on_revocation(next).await?;
        }
    }

    /// Closes the revoked devices' streams whose connections did not close them in time.
    async fn cut_revoked(&mut self, socket: &mut impl Carrier) -> Result<(), String> {
        let now = Instant::now();
        let due: Vec<u32> = self
            .conns
            .iter()
            .filter(|(_, c)| c.cut_at.is_some_and(|t| t <= now))
            .map(|(s, _)| *s)
            .collect();
        for stream in due {
            self.close(stream, CLOSE_UNAUTHORIZED, "device revoked: pair again", socket).await?;
        }
        self.note_count();
        Ok(())
    }
}
