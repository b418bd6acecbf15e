#!/usr/bin/env python3
"""A Nucleic sync-protocol client written from docs/protocol.md and the JSON Schema alone.

Python 3.11, standard library only (a minimal RFC 6455 WebSocket client below); every message
sent and received is checked against docs/protocol.v1.schema.json. It runs the
whole loop against a running host: read the port and token from $NUCLEIC_HOME, hello, add a
project, start a session of the simulated agent, stream its events, disconnect while an
approval is pending, reconnect from the cursor (no gap, no duplicate), find the pending
approval, answer it (a second answer is alreadyResolved, a request never asked notFound),
wait for the turn's end, read the diff, merge, and check the session's
summary. Exits 0 on success; any surprise raises with what was expected.

    NUCLEIC_HOME=~/.nucleic python3 examples/reference_client.py /path/to/git/repo
"""

import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time

DEADLINE_S = float(os.environ.get("NUCLEIC_CLIENT_DEADLINE", "60"))
PROTOCOL_VERSION = 1
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs",
                           f"protocol.v{PROTOCOL_VERSION}.schema.json")
SCHEMA = json.load(open(SCHEMA_PATH))


def violation(schema, value, at="$"):
    """The first way `value` breaks `schema` (the JSON Schema subset the host's schema uses)."""
    if schema is True or schema == {}:
        return None
    if schema is False:
        return f"{at}: not allowed"
    if "$ref" in schema:
        found = violation(SCHEMA["$defs"][schema["$ref"].split("/")[-1]], value, at)
        if found:
            return found
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        fits = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
                "string": lambda v: isinstance(v, str), "null": lambda v: v is None,
                "boolean": lambda v: isinstance(v, bool),
                "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
                "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not any(fits[k](value) for k in kinds):
            return f"{at}: {value!r} is not {kinds}"
    if "const" in schema and value != schema["const"]:
        return f"{at}: {value!r} is not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{at}: {value!r} is not one of {schema['enum']}"
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                return f"{at}: missing {name}"
        for name, field in value.items():
            if name in schema.get("properties", {}):
                found = violation(schema["properties"][name], field, f"{at}.{name}")
                if found:
                    return found
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found = violation(schema["items"], item, f"{at}[{i}]")
            if found:
                return found
    for sub in schema.get("allOf", []):
        found = violation(sub, value, at)
        if found:
            return found
    if "anyOf" in schema and all(violation(s, value, at) for s in schema["anyOf"]):
        return f"{at}: matches no anyOf branch"
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not violation(s, value, at)]
        if len(matching) != 1:
            return f"{at}: {value!r} matches {len(matching)} oneOf branches"
    return None


def conform(name, message):
    found = violation({"$ref": f"#/$defs/{name}"}, message)
    if found:
        raise AssertionError(f"a {name} that breaks the schema: {found}")
    return message


class WebSocket:
    """One client WebSocket connection: text frames out (masked), text frames in."""

    def __init__(self, port, token, deadline):
        self.deadline = deadline
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=self.remaining())
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.recv_some()
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        if " 101 " not in lines[0] + " ":
            raise RuntimeError(f"upgrade refused: {lines[0]}")
        accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        if not any(l.lower() == f"sec-websocket-accept: {accept}".lower() for l in lines[1:]):
            raise RuntimeError(f"bad Sec-WebSocket-Accept (wanted {accept}): {lines}")
        self.close_code = None
        self.received = 0

    def remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the client's {DEADLINE_S:.0f} s deadline passed")
        return left

    def recv_some(self):
        self.sock.settimeout(self.remaining())
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the host closed the TCP connection")
        return data

    def read_exact(self, n):
        while len(self.buffer) < n:
            self.buffer += self.recv_some()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, message):
        self.send_frame(0x1, json.dumps(conform("ClientMessage", message)).encode())

    def recv(self):
        """The next JSON message; answers pings; raises on close."""
        parts = []
        while True:
            b0, b1 = self.read_exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self.read_exact(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self.read_exact(8))
            mask = self.read_exact(4) if b1 & 0x80 else None
            payload = self.read_exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x9:
                self.send_frame(0xA, payload)
            elif opcode == 0x8:
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                raise ConnectionError(f"closed by the host with {self.close_code}")
            elif opcode in (0x1, 0x0):
                parts.append(payload)
                if b0 & 0x80:
                    self.received += 1
                    return conform("HostMessage", json.loads(b"".join(parts)))

    def close(self):
        try:
            self.send_frame(0x8, struct.pack("!H", 1000))
        finally:
            self.sock.close()


class Client:
    """Requests with message ids; events and sessionChanged kept aside while waiting."""

    def __init__(self, home, deadline):
        daemon = json.load(open(os.path.join(home, "daemon.json")))
        token = open(os.path.join(home, "token")).read().strip()
        self.ws = WebSocket(daemon["port"], token, deadline)
        self.counter = 0
        self.pending_events = []
        self.ws.send({"type": "hello", "clientID": "reference-client",
                      "clientName": "reference client", "protocolVersion": PROTOCOL_VERSION})
        welcome = self.ws.recv()
        expect(welcome["type"] == "welcome", f"welcome, got {welcome}")
        expect(welcome["protocolVersion"] == PROTOCOL_VERSION, f"version {welcome}")
        self.backends = {b["backend"]: b for b in welcome["backends"]}

    def request(self, message):
        self.counter += 1
        message_id = f"ref-{time.time_ns()}-{self.counter}"
        self.ws.send({**message, "messageID": message_id})
        while True:
            reply = self.ws.recv()
            if reply.get("messageID") == message_id:
                return reply
            if reply["type"] in ("event", "events", "sessionChanged"):
                self.pending_events.append(reply)
            else:
                raise RuntimeError(f"a reply to another request: {reply}")

    def ok(self, message):
        reply = self.request(message)
        expect(reply["type"] not in ("error", "unsupported"), f"{message['type']}: {reply}")
        return reply

    def next_event(self):
        """The next `event` of a subscription (batches unrolled; sessionChanged skipped)."""
        while True:
            message = self.pending_events.pop(0) if self.pending_events else self.ws.recv()
            if message["type"] == "event":
                return message["event"]
            if message["type"] == "events":
                self.pending_events[:0] = [{"type": "event", "event": e} for e in message["events"]]
            elif message["type"] != "sessionChanged":
                raise RuntimeError(f"unexpected message while streaming: {message}")


def expect(condition, what):
    if not condition:
        raise AssertionError(f"expected {what}")


class Transcript:
    """The events seen so far: gapless seq, and the approvals still pending."""

    def __init__(self, skipping=False):
        self.skipping = skipping  # a filtered subscription (verbosity) skips seq numbers
        self.last_seq = 0
        self.pending = {}
        self.status = None
        self.turns_completed = 0

    def add(self, event):
        expected_ok = event["seq"] > self.last_seq if self.skipping else event["seq"] == self.last_seq + 1
        expect(expected_ok, f"seq after {self.last_seq} (no gap, no duplicate), got {event['seq']}")
        self.last_seq = event["seq"]
        kind = event["kind"]
        if kind["type"] == "approvalRequested":
            self.pending[kind["requestID"]] = kind
        elif kind["type"] == "approvalResolved":
            self.pending.pop(kind["requestID"], None)
        elif kind["type"] == "statusChanged":
            self.status = kind["status"]
        elif kind["type"] == "turnCompleted":
            self.turns_completed += 1
        return kind["type"]


def main():
    home = os.environ["NUCLEIC_HOME"]
    repo = os.path.abspath(sys.argv[1])
    deadline = time.monotonic() + DEADLINE_S
    log = lambda *a: print("reference-client:", *a, flush=True)

    client = Client(home, deadline)
    expect(client.backends["simulated"]["available"], "the simulated backend available")
    project = client.ok({"type": "intent", "intent": {"kind": "addProject", "path": repo}})
    project_id = project["result"]["projectID"]
    started = client.ok({"type": "intent", "intent": {
        "kind": "newSession", "projectID": project_id, "backend": "simulated",
        "prompt": "write notes.txt containing hi"}})
    session_id = started["result"]["sessionID"]
    log("session", session_id)
    client.ok({"type": "subscribe", "sessionID": session_id, "fromSeq": 1, "verbosity": "full"})
    seen = Transcript()
    while not seen.pending:
        log("event", seen.last_seq + 1, seen.add(client.next_event()))
    client.ws.close()
    log("disconnected at seq", seen.last_seq, "with", len(seen.pending), "approval(s) pending")

    # A client that kept nothing finds the open approvals by replaying from seq 1: every
    # approvalRequested without its approvalResolved (the document's rule).
    replay = Client(home, deadline)
    replay.ok({"type": "subscribe", "sessionID": session_id, "fromSeq": 1, "verbosity": "summary"})
    replayed = Transcript(skipping=True)
    while replayed.last_seq < seen.last_seq:
        replayed.add(replay.next_event())
    expect(set(replayed.pending) == set(seen.pending),
           f"the replay's pending approvals {set(replayed.pending)} == {set(seen.pending)}")
    replay.ws.close()

    client = Client(home, deadline)
    sessions = client.ok({"type": "listSessions"})["sessions"]
    summary = next(s for s in sessions if s["sessionID"] == session_id)
    # The summary is a list view's: it may lag the events; pending approvals come from them.
    log("summary status", summary["status"], "pendingApprovals", summary["pendingApprovals"])
    client.ok({"type": "subscribe", "sessionID": session_id, "fromSeq": seen.last_seq + 1,
               "verbosity": "full"})
    for request_id in list(seen.pending):
        reply = client.ok({"type": "decide", "sessionID": session_id, "requestID": request_id,
                           "decision": {"type": "allow"}})
        expect(reply["type"] == "ack", f"ack for the decision, got {reply}")
        again = client.request({"type": "decide", "sessionID": session_id,
                                "requestID": request_id, "decision": {"type": "deny", "message": "late"}})
        expect(again.get("code") == "alreadyResolved" and again.get("resolvedBy"),
               f"alreadyResolved naming who answered, got {again}")
    unknown = client.request({"type": "decide", "sessionID": session_id,
                              "requestID": "never-asked", "decision": {"type": "allow"}})
    expect(unknown.get("code") == "notFound", f"notFound for a request never asked, got {unknown}")
    while not (seen.turns_completed and seen.status == "awaiting-input"):
        log("event", seen.last_seq + 1, seen.add(client.next_event()))
    expect(not seen.pending, "no approval pending after the turn")

    facts = client.ok({"type": "gitFacts", "sessionID": session_id, "includePatch": True})
    files = [f["path"] for f in facts["facts"]["files"]]
    expect("notes.txt" in files, f"notes.txt in the diff, got {files}")
    expect("+hi" in facts["facts"]["patch"], "the patch adds hi")
    client.ok({"type": "intent", "intent": {"kind": "finish", "sessionID": session_id,
               "action": {"action": "merge", "message": "add notes", "updateCheckout": True}}})
    while (kind := seen.add(client.next_event())) != "worktreeFinished":
        log("event", seen.last_seq, kind)
    client.ws.close()
    log("done: merged at seq", seen.last_seq)
    print(json.dumps({"sessionID": session_id, "projectID": project_id,
                      "lastSeq": seen.last_seq}))


if __name__ == "__main__":
    main()
