/** Says when the host is unreachable and the data on screen may be stale. */
import type { CockpitStore } from "../store";

export function LinkBanner({ store }: { store: CockpitStore }) {
  if (store.protocolRefused)
    return (
      <div class="banner error" role="alert" data-testid="link-banner">
        This app does not speak the host's protocol ({store.protocolRefused}).{" "}
        {store.protocolUpdate === "none"
          ? "The host serves no newer app yet: close it and open it again once the host is updated."
          : "Looking for the current app…"}
      </div>
    );
  if (store.restoredAt !== null)
    return (
      <div class="banner warn stale-snapshot" role="status" data-testid="link-banner" data-stale="snapshot">
        Offline — showing what this device last saw at {new Date(store.restoredAt).toLocaleString()}. It may be out of
        date; actions are disabled until the host is back.
      </div>
    );
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
