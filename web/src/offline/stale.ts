/** The "connection is stale" signal: whether what the page shows may be out of date, since
 *  when, and whether it comes from this device's offline snapshot. Other features (the offline
 *  action queue, the inbox) read this instead of the link state. */
import type { CockpitStore } from "../store";

export interface Staleness {
  /** Unix ms: since when the data may be out of date. */
  since: number;
  /** The lists come from the offline snapshot saved at `since`, not from this connection. */
  fromSnapshot: boolean;
}

/** Null while connected with fresh data. */
export function staleness(store: CockpitStore): Staleness | null {
  if (store.restoredAt !== null) return { since: store.restoredAt, fromSnapshot: true };
  if (store.link === "online") return null;
  return { since: store.offlineSince ?? Date.now(), fromSnapshot: false };
}
