#!/usr/bin/env python3
"""A Nucleic device over the relay, written from docs/channel.md (and docs/protocol.md) alone.

Python 3.9+, the standard library (a minimal RFC 6455 WebSocket client below) and one PyPI
package for Noise, `noiseprotocol` (scripts/install-device-client.sh installs it pinned into a
venv outside the repository). What it does, in order, failing with what it expected:

1. checks its own Noise, framing and link parsing against the published vectors
   (docs/channel-vectors.json) byte for byte;
2. pairs through a pairing link (mode 01, XXpsk3), taking the host's `welcome` as the
   confirmation;
3. refusals: the same link again with another key (closed 4000 before anything from the host),
   a fresh link with a wrong secret (closed 4000 after message 3, the link left usable: the right
   secret pairs after it), a revoked device (a close 4401 inside its channel, then its reconnects
   closed 4000);
4. reconnects (mode 02, IK) and drives a session of the simulated agent: project, session,
   stream, an approval pending when it drops the connection without a word, a new IK channel,
   `subscribe` from its cursor — no gap, no duplicate — the approval answered, the turn's end;
5. replays its own recorded IK first frame and the frames after it on a new connection, as a
   relay could: the host's answer is of no use and the frames get the stream closed (4000);
6. with NUCLEIC_CLIENT_LINGER_S, stays connected and silent that long answering the host's
   pings (a host with a shorter idle deadline would otherwise close it), then is still served.

    NUCLEIC_PAIR_COMMAND='nucleic pair --json' python3 examples/device_client.py /path/to/repo
    python3 examples/device_client.py --check-vectors

NUCLEIC_PAIR_COMMAND is a shell command that prints a fresh pairing link (`nucleic pair --json`
on the host's machine, here standing in for scanning its QR code). The last line printed is a JSON
summary.
"""

import base64
import hashlib
import json
import os
import select
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.parse
import warnings

from noise.connection import Keypair, NoiseConnection
from noise.backends.default.keypairs import KeyPair25519

DEADLINE_S = float(os.environ.get("NUCLEIC_CLIENT_DEADLINE", "90"))
HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "docs", "channel-vectors.json")

# docs/channel.md, sections 3–5.
MODE_PAIR, MODE_CONNECT = 0x01, 0x02
PAIRING = b"Noise_XXpsk3_25519_ChaChaPoly_SHA256"
CONNECT = b"Noise_IK_25519_ChaChaPoly_SHA256"
MAX_FRAME = 65535
TAG = 16
MAX_CHUNK = MAX_FRAME - TAG - 1
LAST, MORE = 0x00, 0x01
TEXT, CLOSE, PING, PONG = 0x00, 0x01, 0x02, 0x03
MAX_MESSAGE = 16 * 1024 * 1024
CLOSED_BY_HOST = 4000
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

log = lambda *a: print("device-client:", *a, flush=True)


def expect(condition, what):
    if not condition:
        raise AssertionError(f"expected {what}")


def prologue(host_id):
    return b"nucleic-channel/1\n" + host_id.encode("ascii")


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def parse_link(url):
    """The link's fields (section 1), or ValueError."""
    fragment = urllib.parse.urlsplit(url).fragment
    if not fragment.startswith("pair&"):
        raise ValueError("not a pairing link")
    fields = urllib.parse.parse_qs(fragment[len("pair&"):], keep_blank_values=True)
    one = lambda k: fields.get(k, [""])[0]
    relay, host_id = one("r"), one("h")
    host_key, secret = b64url(one("k")), b64url(one("s"))
    if not (relay.startswith("ws://") or relay.startswith("wss://")):
        raise ValueError(f"relay {relay!r} is not ws:// or wss://")
    if len(host_id) != 64 or any(c not in "0123456789abcdef" for c in host_id):
        raise ValueError("the host id is not 64 lowercase hex digits")
    if len(host_key) != 32 or len(secret) != 32:
        raise ValueError("k and s must be 32 bytes each")
    return {"relay": relay, "hostID": host_id, "hostKey": host_key, "secret": secret,
            "name": one("n"), "direct": fields.get("l", []), "machine": one("m") or None}


class Closed(Exception):
    """The WebSocket closed: `code` is the relay's (or the direct listener's) close code."""

    def __init__(self, code, reason):
        super().__init__(f"closed {code}: {reason}")
        self.code, self.reason = code, reason


class WebSocket:
    """One client WebSocket: binary messages both ways (RFC 6455, client side, masked)."""

    def __init__(self, url, deadline):
        self.deadline = deadline
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        raw = socket.create_connection((parts.hostname, port), timeout=self.remaining())
        self.sock = ssl.create_default_context().wrap_socket(raw, server_hostname=parts.hostname) \
            if parts.scheme == "wss" else raw
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self.recv_some()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ")[1])
        if self.status != 101:
            self.sock.close()
            raise ConnectionRefusedError(f"upgrade refused: {lines[0]}")
        accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        expect(any(l.lower() == f"sec-websocket-accept: {accept}".lower() for l in lines[1:]),
               "a valid Sec-WebSocket-Accept")

    def remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the {DEADLINE_S:.0f} s deadline passed")
        return left

    def recv_some(self, timeout=None):
        self.sock.settimeout(min(self.remaining(), timeout) if timeout else self.remaining())
        data = self.sock.recv(65536)
        if not data:
            raise Closed(None, "the TCP connection ended without a close frame")
        return data

    def read_exact(self, n, timeout=None):
        while len(self.buffer) < n:
            self.buffer += self.recv_some(timeout)
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send_frame(self, opcode, payload):
        n = len(payload)
        header = bytes([0x80 | opcode])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send(self, data):
        self.send_frame(0x2, data)

    def recv(self, timeout=None):
        """The next binary message; raises Closed with the close code."""
        parts = []
        while True:
            b0, b1 = self.read_exact(2, timeout)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self.read_exact(2, timeout))
            elif n == 127:
                (n,) = struct.unpack("!Q", self.read_exact(8, timeout))
            payload = self.read_exact(n, timeout)
            if opcode == 0x9:
                self.send_frame(0xA, payload)
            elif opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                try:
                    self.send_frame(0x8, payload[:2])
                except OSError:
                    pass
                self.sock.close()
                raise Closed(code, payload[2:].decode("utf-8", "replace"))
            elif opcode == 0x1:
                raise AssertionError("the relay sent a text frame")
            elif opcode in (0x0, 0x2):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts)

    def close(self, code=1000):
        try:
            self.send_frame(0x8, struct.pack("!H", code))
        except OSError:
            pass
        self.sock.close()

    def drop(self):
        """Gone without a word (a phone losing its network): no close frame."""
        self.sock.close()


class Transport:
    """Section 4: frames with a flag byte, chunks of at most 65,518 bytes, reassembly under a cap."""

    def __init__(self, noise):
        self.noise = noise
        self.partial = b""

    def seal(self, message):
        chunks = [message[i:i + MAX_CHUNK] for i in range(0, len(message), MAX_CHUNK)] or [b""]
        return [self.noise.encrypt(bytes([MORE if i < len(chunks) - 1 else LAST]) + c)
                for i, c in enumerate(chunks)]

    def open(self, frame):
        """The whole message once its last frame came, else None; raises on anything wrong."""
        expect(TAG + 1 <= len(frame) <= MAX_FRAME, f"a frame of 17 to 65,535 bytes, got {len(frame)}")
        plain = self.noise.decrypt(bytes(frame))
        flag, chunk = plain[0], plain[1:]
        expect(len(self.partial) + len(chunk) <= MAX_MESSAGE, "a message under the cap")
        self.partial += chunk
        if flag == MORE:
            return None
        expect(flag == LAST, f"flag 00 or 01, got {flag:02x}")
        message, self.partial = self.partial, b""
        return message


def handshake(kind, static_private, host_id, host_key, secret=None, ephemeral=None):
    """A device's (initiator's) Noise handshake of section 3, not started."""
    noise = NoiseConnection.from_name(PAIRING if kind == "pair" else CONNECT)
    noise.set_as_initiator()
    noise.set_keypair_from_private_bytes(Keypair.STATIC, static_private)
    if kind == "pair":
        noise.set_psks(psk=secret)
    else:
        noise.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, host_key)
    if ephemeral is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            noise.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral)
    noise.set_prologue(prologue(host_id))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # noiseprotocol warns about a preset ephemeral key
        noise.start_handshake()
    return noise


PONGS = [0]  # pings answered, over every channel


class Channel:
    """One device connection: the handshake, then channel messages (section 5) both ways."""

    def __init__(self, host, static_private, mode, deadline, secret=None):
        self.ws = WebSocket(f"{host['relay']}/v1/rooms/{host['hostID']}/device", deadline)
        self.sent = []  # every frame sent, for the replay attack
        self.heard = False  # anything from the host over the open channel
        noise = handshake(mode, static_private, host["hostID"], host["hostKey"], secret)
        first = bytes([MODE_PAIR if mode == "pair" else MODE_CONNECT]) + noise.write_message(b"")
        self.raw_send(first)
        message2 = self.ws.recv(timeout=10)
        if mode == "pair":
            noise.read_message(message2)
            learnt = noise.noise_protocol.handshake_state.rs.public_bytes
            expect(learnt == host["hostKey"], "the host's static key to be the link's k")
            self.raw_send(noise.write_message(b""))
        else:
            noise.read_message(message2)
        expect(noise.handshake_finished, "the handshake finished")
        self.handshake_hash = noise.get_handshake_hash()
        self.transport = Transport(noise)
        self.queue = []

    def raw_send(self, frame):
        self.sent.append(frame)
        self.ws.send(frame)

    def send_message(self, message):
        for frame in self.transport.seal(message):
            self.raw_send(frame)

    def send(self, obj):
        self.send_message(bytes([TEXT]) + json.dumps(obj).encode())

    def recv(self):
        """The next JSON message from the host; pongs its pings; raises Closed on a close."""
        while True:
            text = self.step()
            if text is not None:
                return text

    def step(self):
        """Reads one frame: the JSON message it completes, else None (a ping answered, a pong,
        a chunk of a longer message); raises Closed on a close."""
        message = self.transport.open(self.ws.recv())
        self.heard = True
        if message is None:
            return None
        kind, body = message[0], message[1:]
        if kind == TEXT:
            return json.loads(body.decode("utf-8"))
        if kind == PING:
            expect(body == b"", "an empty ping")
            self.send_message(bytes([PONG]))
            PONGS[0] += 1
        elif kind == CLOSE:
            (code,) = struct.unpack("!H", body[:2])
            self.ws.close()
            raise Closed(code, body[2:].decode("utf-8", "replace"))
        elif kind != PONG:
            raise AssertionError(f"unknown channel message kind {kind:02x}")
        return None

    def linger(self, seconds):
        """Stays connected and silent for `seconds`, answering pings: the host must not close."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            if self.ws.buffer or select.select([self.ws.sock], [], [], left)[0]:
                text = self.step()
                expect(text is None or text.get("type") == "sessionChanged", f"nothing but pings while idle, got {text}")

    def close(self):
        try:
            self.send_message(bytes([CLOSE]) + struct.pack("!H", 1000) + b"bye")
        finally:
            self.ws.close()


class Device:
    """Requests with message ids over a channel; events kept aside while waiting for a reply."""

    def __init__(self, host, static_private, mode, deadline, secret=None):
        self.channel = Channel(host, static_private, mode, deadline, secret)
        self.counter = 0
        self.events = []
        self.channel.send({"type": "hello", "clientID": "python-device", "clientName": "python device",
                           "protocolVersion": 1})
        self.welcome = self.channel.recv()
        expect(self.welcome["type"] == "welcome", f"welcome, got {self.welcome}")

    def request(self, message):
        self.counter += 1
        message_id = f"py-{time.time_ns()}-{self.counter}"
        self.channel.send({**message, "messageID": message_id})
        while True:
            reply = self.channel.recv()
            if reply.get("messageID") == message_id:
                return reply
            if reply["type"] in ("event", "events", "sessionChanged"):
                self.events.append(reply)
            else:
                raise AssertionError(f"a reply to another request: {reply}")

    def ok(self, message):
        reply = self.request(message)
        expect(reply["type"] not in ("error", "unsupported"), f"{message['type']}: {reply}")
        return reply

    def next_event(self):
        while True:
            message = self.events.pop(0) if self.events else self.channel.recv()
            if message["type"] == "event":
                return message["event"]
            if message["type"] == "events":
                self.events[:0] = [{"type": "event", "event": e} for e in message["events"]]


def refused(host, static_private, mode, deadline, secret=None):
    """The close code of a device the host refuses: 4000 before anything over the channel."""
    try:
        device = Device(host, static_private, mode, deadline, secret)
    except Closed as closed:
        return closed.code
    device.channel.close()
    raise AssertionError(f"the host accepted it: {device.welcome['type']}")


def check_vectors(path):
    """docs/channel.md, section 9: this client's Noise, framing and link parsing."""
    v = json.load(open(path))
    x = bytes.fromhex
    keys = v["keys"]
    expect(KeyPair25519.from_private_bytes(x(keys["deviceStaticPrivate"])).public_bytes.hex()
           == keys["deviceStaticPublic"], "the device's public key")
    expect(KeyPair25519.from_private_bytes(x(keys["hostStaticPrivate"])).public_bytes.hex()
           == keys["hostStaticPublic"], "the host's public key")
    expect(prologue(v["hostID"]).hex() == v["prologue"], "the prologue")
    link = parse_link(v["link"]["url"])
    expect(link["hostKey"].hex() == keys["hostStaticPublic"] and link["secret"].hex() == keys["pairingSecret"]
           and link["relay"] == v["link"]["relay"] and link["name"] == v["link"]["name"]
           and link["machine"] == v["link"]["machine"] and link["hostID"] == v["hostID"], "the link's fields")

    def responder(kind, ephemeral):
        noise = NoiseConnection.from_name(PAIRING if kind == "pair" else CONNECT)
        noise.set_as_responder()
        noise.set_keypair_from_private_bytes(Keypair.STATIC, x(keys["hostStaticPrivate"]))
        if kind == "pair":
            noise.set_psks(psk=x(keys["pairingSecret"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            noise.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral)
            noise.set_prologue(prologue(v["hostID"]))
            noise.start_handshake()
        return noise

    for kind, name, mode in (("pair", "pairing", MODE_PAIR), ("connect", "reconnect", MODE_CONNECT)):
        section = v[name]
        e_dev = x(keys["devicePairingEphemeral" if kind == "pair" else "deviceReconnectEphemeral"])
        e_host = x(keys["hostPairingEphemeral" if kind == "pair" else "hostReconnectEphemeral"])
        d = handshake(kind, x(keys["deviceStaticPrivate"]), v["hostID"], x(keys["hostStaticPublic"]),
                      x(keys["pairingSecret"]), e_dev)
        h = responder(kind, e_host)
        m1 = bytes(d.write_message(b""))
        expect(m1.hex() == section["message1"], f"{name} message 1")
        expect((bytes([mode]) + m1).hex() == section["firstFrame"], f"{name} first frame")
        h.read_message(m1)
        m2 = bytes(h.write_message(b""))
        expect(m2.hex() == section["message2"], f"{name} message 2")
        d.read_message(m2)
        if kind == "pair":
            m3 = bytes(d.write_message(b""))
            expect(m3.hex() == section["message3"], f"{name} message 3")
            h.read_message(m3)
        expect(d.get_handshake_hash().hex() == section["handshakeHash"], f"{name} handshake hash")
        td, th = Transport(d), Transport(h)
        for f in section["frames"]:
            sender, receiver = (td, th) if f["from"] == "device" else (th, td)
            sealed = sender.seal(x(f["message"]))
            expect(len(sealed) == 1 and sealed[0].hex() == f["frame"], f"{name}: {f['what']}")
            expect(receiver.open(sealed[0]) == x(f["message"]), f"{name}: {f['what']} opens")
        if "split" in section:
            s = section["split"]
            big = b"\x00" + b"a" * (s["messageLength"] - 1)
            parts = th.seal(big)
            expect([len(p) for p in parts] == s["frameLengths"], "the split's frame lengths")
            expect([hashlib.sha256(p).hexdigest() for p in parts] == s["frameSha256"], "the split's frames")
            expect(td.open(parts[0]) is None and td.open(parts[1]) == big, "the split reassembled")
    log("the published vectors match")


def main():
    if "--check-vectors" in sys.argv:
        at = sys.argv.index("--check-vectors") + 1
        check_vectors(sys.argv[at] if at < len(sys.argv) else VECTORS)
        return
    check_vectors(VECTORS)
    repo = os.path.abspath(sys.argv[1])
    pair_command = os.environ["NUCLEIC_PAIR_COMMAND"]
    deadline = time.monotonic() + DEADLINE_S
    new_link = lambda: json.loads(subprocess.run(pair_command, shell=True, check=True, capture_output=True,
                                                 text=True, timeout=30).stdout)["link"]

    # Pairing (mode 01, XXpsk3): confirmed by the welcome.
    link = new_link()
    host = parse_link(link)
    key = os.urandom(32)
    paired = Device(host, key, "pair", deadline, host["secret"])
    log("paired; host id", host["hostID"][:12], "handshake hash", paired.channel.handshake_hash.hex()[:16])
    expect(paired.welcome.get("relayHostID") == host["hostID"], "the welcome to name the host id")
    paired.channel.close()

    # Refused: the same link again, for another device.
    code = refused(host, os.urandom(32), "pair", deadline, host["secret"])
    expect(code == CLOSED_BY_HOST, f"a reused link closed with 4000, got {code}")
    log("a reused link: refused with", code)
    # Refused: a wrong secret; the link stays usable for the right one.
    other = parse_link(new_link())
    wrong = bytes([other["secret"][0] ^ 1]) + other["secret"][1:]
    second_key = os.urandom(32)
    code = refused(other, second_key, "pair", deadline, wrong)
    expect(code == CLOSED_BY_HOST, f"a wrong secret closed with 4000, got {code}")
    log("a wrong pre-shared key: refused with", code)
    Device(other, second_key, "pair", deadline, other["secret"]).channel.close()
    log("the same link's right secret pairs after it")
    # Revoked (here the second device signs itself out): a close 4401 inside the channel, and its
    # key is refused from then on.
    second = Device(other, second_key, "connect", deadline)
    me = next(d for d in second.ok({"type": "listDevices"})["devices"] if d.get("current"))
    second.ok({"type": "intent", "intent": {"kind": "revokeDevice", "deviceID": me["deviceID"]}})
    try:
        while True:
            second.channel.recv()
    except Closed as closed:
        expect(closed.code == 4401, f"a close 4401 inside the channel, got {closed.code} {closed.reason}")
        log("revoked: closed inside the channel with", closed.code, closed.reason)
    code = refused(other, second_key, "connect", deadline)
    expect(code == CLOSED_BY_HOST, f"a revoked key's reconnect closed with 4000, got {code}")
    log("a revoked key's reconnect: refused with", code)

    # Reconnect (mode 02, IK) and a session of the simulated agent.
    device = Device(host, key, "connect", deadline)
    project = device.ok({"type": "intent", "intent": {"kind": "addProject", "path": repo}})
    started = device.ok({"type": "intent", "intent": {
        "kind": "newSession", "projectID": project["result"]["projectID"], "backend": "simulated",
        "prompt": "write MARKER-notes.txt containing MARKER-content"}})
    session = started["result"]["sessionID"]
    device.ok({"type": "subscribe", "sessionID": session, "fromSeq": 1, "verbosity": "full"})
    seqs, pending = [], None
    while pending is None:
        event = device.next_event()
        seqs.append(event["seq"])
        if event["kind"]["type"] == "approvalRequested":
            pending = event["kind"]["requestID"]
    recorded = list(device.channel.sent)
    device.channel.ws.drop()
    log("dropped the connection at seq", seqs[-1], "with an approval pending")

    device = Device(host, key, "connect", deadline)
    device.ok({"type": "subscribe", "sessionID": session, "fromSeq": seqs[-1] + 1, "verbosity": "full"})
    device.ok({"type": "decide", "sessionID": session, "requestID": pending, "decision": {"type": "allow"}})
    status = None
    turns = 0
    while not (turns and status == "awaiting-input"):
        event = device.next_event()
        seqs.append(event["seq"])
        kind = event["kind"]
        status = kind.get("status", status) if kind["type"] == "statusChanged" else status
        turns += kind["type"] == "turnCompleted"
    expect(seqs == list(range(1, len(seqs) + 1)), f"seqs 1…N with no gap and no duplicate, got {seqs}")
    facts = device.ok({"type": "gitFacts", "sessionID": session, "includePatch": True})
    expect("+MARKER-content" in facts["facts"]["patch"], "the diff to add the content")
    log("reconnected with IK; the session streamed", len(seqs), "events with no gap")

    # Replayed handshake and frames, as a relay could: nothing useful comes back.
    replay = WebSocket(f"{host['relay']}/v1/rooms/{host['hostID']}/device", deadline)
    replay.send(recorded[0])
    answer = replay.recv(timeout=10)
    expect(len(answer) == 48, f"an IK message 2 (48 bytes) to the replayed message 1, got {len(answer)}")
    for frame in recorded[1:]:
        replay.send(frame)
    try:
        extra = replay.recv(timeout=10)
        raise AssertionError(f"the host answered replayed frames ({len(extra)} bytes)")
    except Closed as closed:
        expect(closed.code == CLOSED_BY_HOST, f"the replayer closed with 4000, got {closed.code}")
    log("a replayed handshake and", len(recorded) - 1, "replayed frames: closed with 4000")
    linger = float(os.environ.get("NUCLEIC_CLIENT_LINGER_S", "0"))
    if linger:
        device.channel.linger(linger)
        log(f"idle for {linger:g} s: {PONGS[0]} ping(s) answered, still connected")
    still = device.ok({"type": "listSessions"})
    expect(any(s["sessionID"] == session for s in still["sessions"]), "the device still served")
    device.channel.close()
    print(json.dumps({"sessionID": session, "lastSeq": seqs[-1], "hostID": host["hostID"],
                      "replayedFrames": len(recorded) - 1, "pongs": PONGS[0]}))


if __name__ == "__main__":
    main()
