/** Says when the host is unreachable and the data on screen may be stale. */
import type { CockpitStore } from "../store";

export function LinkBanner({ store }: { store: CockpitStore }) {
  if (store.link === "online") return null;
  if (store.link === "signedOut")
    return (
      <div class="banner error" role="alert" data-testid="link-banner">
        Signed out: this browser was signed out or revoked. Run <code>nucleic open</code> for a new sign-in link.
      </div>
    );
  const since = store.offlineSince ? new Date(store.offlineSince).toLocaleTimeString() : null;
  return (
    <div class="banner warn" role="status" data-testid="link-banner">
      {store.link === "connecting" && !since
        ? "Connecting to the host…"
        : `Disconnected from the host${since ? ` since ${since}` : ""} — reconnecting. What you see may be stale; messages, starts and renames are queued, approvals wait for the link.`}
    </div>
  );
}
