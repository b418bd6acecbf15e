/** The devices sheet: every browser signed in to this host, when it was last seen, revoking one,
 *  and signing this one out (revoking itself); push, remote access, and the chat bridges' users. */
import { useEffect, useState } from "preact/hooks";

import type { DeviceSummary } from "../protocol.gen";
import { type CockpitStore, errorText } from "../store";
import { ChatPanel } from "./ChatPanel";
import { PushSettingsPanel } from "./PushSettingsPanel";
import { RemotePanel } from "./RemotePanel";

function when(ms: number | null | undefined): string {
  return ms ? new Date(ms).toLocaleString() : "never";
}

export function DevicesSheet({ store, onClose }: { store: CockpitStore; onClose: () => void }) {
  const [devices, setDevices] = useState<DeviceSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async () => {
    try {
      const reply = await store.request({ type: "listDevices" });
      if (reply.type === "devices") setDevices(reply.devices);
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => {
    void load();
  }, [store.link]);
  const revoke = async (d: DeviceSummary) => {
    const self = d.current;
    if (!confirm(self ? "Sign this browser out?" : `Revoke "${d.name}"? It is signed out at once, for good.`)) return;
    setError(null);
    try {
      await store.request({ type: "intent", intent: { kind: "revokeDevice", deviceID: d.deviceID } });
      if (!self) await load();
    } catch (e) {
      // Signing out closes this very connection: the link turns "signed out" by itself.
      if (!self) setError(errorText(e));
    }
  };
  const active = (devices ?? []).filter((d) => !d.revokedAt);
  const revoked = (devices ?? []).filter((d) => d.revokedAt);
  return (
    <div class="sheet-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <section class="sheet" data-testid="devices-sheet" aria-label="Devices">
        <header>
          <h2>Devices</h2>
          <button class="ghost small" onClick={onClose} data-testid="close-devices">
            Close
          </button>
        </header>
        {error && <p class="error" role="alert">{error}</p>}
        {devices === null ? (
          <p class="empty">Loading…</p>
        ) : (
          <ul class="devices">
            {active.map((d) => (
              <li key={d.deviceID} data-testid="device" data-current={d.current ? "yes" : "no"}>
                <strong>{d.name}</strong>
                {d.current && <span class="badge"> this browser</span>}
                <div class="muted">
                  signed in {when(d.pairedAt)} · last seen {when(d.lastSeenAt)}
                </div>
                <button class="ghost small" onClick={() => revoke(d)} disabled={store.link !== "online"} data-testid={d.current ? "sign-out" : "revoke-device"}>
                  {d.current ? "Sign out" : "Revoke"}
                </button>
              </li>
            ))}
            {revoked.length > 0 && <li class="muted">{revoked.length} revoked</li>}
          </ul>
        )}
        <PushSettingsPanel store={store} />
        <RemotePanel store={store} />
        <ChatPanel store={store} />
        <p class="muted">
          The CLI uses the host's token; <code>nucleic token rotate</code> signs every device out.
        </p>
      </section>
    </div>
  );
}
