/** Every host this device knows, at once, for the one inbox and the app badge: the page's own
 *  store (the host it is connected to, through the relay or on the host's own origin) and one
 *  more connection per other remembered host (its direct address or the relay, a fresh IK
 *  handshake each time). Each host's approvals are answered over that host's own channel. */
import { useEffect, useState } from "preact/hooks";

import { hostStorage } from "../pending/storage";
import { CockpitStore } from "../store";
import { dialerFor } from "./boot";
import { type PairedHost, pairedHosts } from "./hosts";
import { LOCAL_HOST } from "./local";

export { LOCAL_HOST };

export interface FleetHost {
  /** The relay host id, or [`LOCAL_HOST`]. */
  hostID: string;
  /** How the inbox names it. */
  label: string;
  store: CockpitStore;
  /** The host the page itself is connected to. */
  primary: boolean;
}

/** A short, readable name for a paired host: its machine name when the link carried one, and
 *  the start of its id (two hosts on one machine differ there). */
export function hostLabel(h: Pick<PairedHost, "hostID"> & { hostName?: string }): string {
  const id = h.hostID.slice(0, 8);
  return h.hostName ? `${h.hostName} · ${id}` : `host ${id}`;
}

/** Whether a host is out of reach: tried and failed (not merely still connecting), or the
 *  host no longer accepts this device. */
export function reach(store: CockpitStore): "online" | "connecting" | "unreachable" | "signedOut" {
  if (store.link === "online") return "online";
  if (store.link === "signedOut") return "signedOut";
  return store.offlineSince === null ? "connecting" : "unreachable";
}

/** The hosts whose requests are listed and counted: with several, those in reach (one out of
 *  reach lists nothing it last knew — it may have been answered elsewhere since — and says so
 *  instead); a lone host as before, its last-known state included. */
export function listed(hosts: FleetHost[]): FleetHost[] {
  return hosts.length > 1 ? hosts.filter((h) => reach(h.store) === "online") : hosts;
}

export class HostFleet {
  readonly hosts: FleetHost[];
  private listeners = new Set<() => void>();
  /** Unsubscribes from the other hosts' stores, by host id. */
  private stops = new Map<string, () => void>();
  private readonly stopPrimary: () => void;
  version = 0;

  constructor(private readonly primary: CockpitStore) {
    const host = primary.remote?.host;
    const hostID = host?.hostID ?? LOCAL_HOST;
    this.hosts = [{ hostID, label: host ? hostLabel(host) : "this host", store: primary, primary: true }];
    // On the host's own address the page learns the host's relay id from its welcome: a paired
    // host with that id is this same host, reached a second way.
    this.stopPrimary = primary.subscribe(() => this.dropSelf());
  }

  /** Connects to every other remembered host (`make` opens a store for one; tests replace it). */
  async start(make: (h: PairedHost) => CockpitStore = openStore): Promise<void> {
    for (const paired of await pairedHosts()) {
      if (this.hosts.some((h) => h.hostID === paired.hostID) || paired.hostID === this.primary.relayHostID) continue;
      const store = make(paired);
      store.start();
      this.add(paired.hostID, hostLabel(paired), store);
    }
  }

  /** Adds another host's store (started by the caller). */
  add(hostID: string, label: string, store: CockpitStore): void {
    this.hosts.push({ hostID, label, store, primary: false });
    this.stops.set(hostID, store.subscribe(() => this.changed()));
    this.dropSelf();
    this.changed();
  }

  /** Closes the connections to the other hosts. */
  close(): void {
    this.stopPrimary();
    for (const stop of this.stops.values()) stop();
    this.stops.clear();
    for (const h of this.hosts) if (!h.primary) h.store.connection.close();
  }

  /** Forgets the other connection to the page's own host, if it has one (listed once). */
  private dropSelf(): void {
    const self = this.primary.relayHostID;
    const at = this.hosts.findIndex((h) => !h.primary && h.hostID === self);
    if (at < 0) return;
    const [twin] = this.hosts.splice(at, 1);
    this.stops.get(twin.hostID)?.();
    this.stops.delete(twin.hostID);
    twin.store.connection.close();
    this.changed();
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    this.version++;
    for (const l of this.listeners) l();
  }
}

/** Another host's store: its own channel, and that host's share of the persisted offline
 *  queue — what was written offline while the page was on that host is flushed to it over this
 *  connection when it is in reach, under the same rules, whichever host the page is on now
 *  (docs/cockpit.md, "Several hosts"). */
function openStore(h: PairedHost): CockpitStore {
  return new CockpitStore("", undefined, undefined, dialerFor(h), hostStorage(h.hostID, false));
}

/** The fleet's hosts, re-rendering the caller when any of the other hosts' lists change (the
 *  page's own store has `useStore`). A page without a fleet has its one host. */
export function useFleet(fleet: HostFleet | undefined, store: CockpitStore): FleetHost[] {
  const [, setV] = useState(0);
  useEffect(() => fleet?.subscribe(() => setV(fleet.version)), [fleet]);
  return fleet?.hosts ?? [{ hostID: store.remote?.host.hostID ?? LOCAL_HOST, label: "this host", store, primary: true }];
}
