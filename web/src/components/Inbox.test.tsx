// The inbox across hosts: every host's requests in one list naming their host, each answered
// over its own host's store (the critical one after the second confirmation), and a host out
// of reach shown as such instead of its last-known requests.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it } from "vitest";

import type { EventKind, Risk, SessionSummary } from "../protocol.gen";
import { HostFleet } from "../remote/fleet";
import { CockpitStore } from "../store";
import { Inbox } from "./Inbox";

function hostStore(sessionID: string, requestID: string, risk: Risk) {
  const store = new CockpitStore("ws://127.0.0.1:1/ws");
  const sent: unknown[] = [];
  store.request = async (m) => {
    sent.push(m);
    return { type: "ack", messageID: "x" };
  };
  store.link = "online";
  const summary: SessionSummary = { sessionID, projectID: "p", title: `title ${sessionID}`, backend: "simulated", status: "awaiting-approval", pendingApprovals: 1, costUSD: 0, lastSeq: 1, updatedAt: 1, archived: false, readOnly: false };
  store.sessions.set(sessionID, summary);
  store.transcript(sessionID).fold([
    { seq: 1, at: "x", sessionID, backend: "simulated", kind: { type: "approvalRequested", requestID, toolName: "Bash", input: { command: "ls" }, risk } as EventKind },
  ]);
  return { store, sent };
}

const changed = (s: CockpitStore) => (s as unknown as { changed(): void }).changed();

afterEach(() => {
  document.body.innerHTML = "";
});

describe("Inbox across hosts", () => {
  it("answers each host's request over that host's store and marks a host out of reach", async () => {
    const a = hostStore("sa", "ra", "low");
    const b = hostStore("sb", "rb", "critical");
    const fleet = new HostFleet(a.store);
    fleet.add("b".repeat(64), "studio · bbbbbbbb", b.store);
    const root = document.createElement("div");
    document.body.append(root);
    await act(async () => render(<Inbox store={a.store} fleet={fleet} />, root));
    const items = [...root.querySelectorAll("[data-testid=inbox-item]")];
    expect(items.map((i) => [i.getAttribute("data-host"), i.getAttribute("data-request")])).toEqual([
      ["b".repeat(64), "rb"],
      ["local", "ra"],
    ]);
    expect(items[0].querySelector("[data-testid=inbox-item-host]")?.textContent).toBe("studio · bbbbbbbb");
    const click = async (item: Element, testid: string) =>
      act(async () => item.querySelector<HTMLButtonElement>(`[data-testid=${testid}]`)!.click());
    // The critical one on B: a first Allow sends nothing; the confirmation goes to B alone.
    await click(items[0], "allow");
    expect(b.sent).toEqual([]);
    await click(items[0], "confirm-critical");
    expect(b.sent).toEqual([{ type: "decide", sessionID: "sb", requestID: "rb", decision: { type: "allow" }, confirmed: true }]);
    await click(items[1], "allow");
    expect(a.sent).toEqual([{ type: "decide", sessionID: "sa", requestID: "ra", decision: { type: "allow" } }]);
    expect(b.sent).toHaveLength(1);

    // B drops: its line says unreachable and its last-known request is not offered.
    b.store.link = "offline";
    b.store.offlineSince = Date.now();
    await act(async () => {
      changed(b.store);
      await Promise.resolve();
    });
    const line = root.querySelector(`[data-testid=inbox-host][data-host="${"b".repeat(64)}"]`);
    expect(line?.getAttribute("data-state")).toBe("unreachable");
    expect(line?.textContent).toContain("studio · bbbbbbbb");
    expect(line?.textContent).toContain("unreachable");
    expect([...root.querySelectorAll("[data-testid=inbox-item]")].map((i) => i.getAttribute("data-request"))).toEqual(["ra"]);
    expect(root.querySelector("[data-testid=inbox-count]")?.textContent).toBe("1");
    // Revoked there: said so, not "unreachable".
    b.store.link = "signedOut";
    await act(async () => {
      changed(b.store);
      await Promise.resolve();
    });
    const revoked = root.querySelector("[data-testid=inbox-host]");
    expect(revoked?.getAttribute("data-state")).toBe("signedOut");
    expect(revoked?.textContent).toContain("revoked");
    fleet.close();
  });

  it("a host still connecting says so", async () => {
    const a = hostStore("sa", "ra", "low");
    const b = hostStore("sb", "rb", "low");
    b.store.link = "connecting";
    const fleet = new HostFleet(a.store);
    fleet.add("c".repeat(64), "host cccccccc", b.store);
    const root = document.createElement("div");
    document.body.append(root);
    await act(async () => render(<Inbox store={a.store} fleet={fleet} />, root));
    expect(root.querySelector("[data-testid=inbox-host]")?.getAttribute("data-state")).toBe("connecting");
    expect(root.querySelectorAll("[data-testid=inbox-item]")).toHaveLength(1);
  });

  it("with one host, lists as before: no host names, no host lines", async () => {
    const a = hostStore("sa", "ra", "low");
    const root = document.createElement("div");
    document.body.append(root);
    await act(async () => render(<Inbox store={a.store} fleet={new HostFleet(a.store)} />, root));
    expect(root.querySelectorAll("[data-testid=inbox-item]")).toHaveLength(1);
    expect(root.querySelector("[data-testid=inbox-item-host]")).toBeNull();
    expect(root.querySelector("[data-testid=inbox-host]")).toBeNull();
  });

  it("the page's own host paired through the relay too is listed once, its twin closed", async () => {
    const a = hostStore("sa", "ra", "low");
    const twin = hostStore("sa", "ra", "low");
    let closed = 0;
    twin.store.connection.close = () => void closed++;
    const fleet = new HostFleet(a.store);
    fleet.add("d".repeat(64), "host dddddddd", twin.store);
    const root = document.createElement("div");
    document.body.append(root);
    await act(async () => render(<Inbox store={a.store} fleet={fleet} />, root));
    expect(root.querySelectorAll("[data-testid=inbox-item]")).toHaveLength(2);
    // The page's own host says, in its welcome, that this relay id is its own.
    await act(async () => {
      a.store.relayHostID = "d".repeat(64);
      changed(a.store);
    });
    expect(fleet.hosts.map((h) => h.hostID)).toEqual(["local"]);
    expect(closed).toBe(1);
    expect(root.querySelectorAll("[data-testid=inbox-item]")).toHaveLength(1);
    expect(root.querySelector("[data-testid=inbox-host]")).toBeNull();
    // Known before the twin is added: it is never listed.
    const again = hostStore("sa", "ra", "low");
    again.store.connection.close = () => void closed++;
    fleet.add("d".repeat(64), "host dddddddd", again.store);
    expect(fleet.hosts).toHaveLength(1);
    expect(closed).toBe(2);
    fleet.close();
  });
});
