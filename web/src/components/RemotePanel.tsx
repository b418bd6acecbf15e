/** Remote access in the devices sheet: on the host's own machine, "Pair a phone" opens a
 *  one-time pairing link (QR code and link, like `nucleic pair`); on a device that reached the
 *  host through the relay, the hosts it paired with, to switch between them. */
import { useEffect, useState } from "preact/hooks";

import { hostLabel } from "../remote/fleet";
import { type PairedHost, pairedHosts, setCurrentHost } from "../remote/hosts";
import type { Pairing } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText } from "../store";

function PairPhone({ store }: { store: CockpitStore }) {
  const [pairing, setPairing] = useState<Pairing | null>(null);
  const [error, setError] = useState<string | null>(null);
  const open = async () => {
    setError(null);
    try {
      const reply = await store.request({ type: "intent", intent: { kind: "pairDevice" } });
      const opened = resultOf(reply, "pairing");
      if (opened) setPairing(opened);
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <div class="pair-phone" data-testid="pair-phone">
      <button class="small" onClick={open} disabled={store.link !== "online"} data-testid="open-pairing">
        Pair a phone
      </button>
      {error && <p class="error" role="alert">{error}</p>}
      {pairing && (
        <div data-testid="pairing">
          {pairing.qrSvg && <img alt="Pairing QR code" width={240} height={240} src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(pairing.qrSvg)}`} />}
          <p class="muted">
            Scan it, or open this link on the phone — once, until {new Date(pairing.expiresAt).toLocaleTimeString()}:
          </p>
          <code class="pairing-link" data-testid="pairing-link">{pairing.link}</code>
        </div>
      )}
    </div>
  );
}

function RemoteHosts({ current }: { current: string }) {
  const [hosts, setHosts] = useState<PairedHost[]>([]);
  useEffect(() => {
    void pairedHosts().then(setHosts);
  }, []);
  if (hosts.length < 2) return null;
  return (
    <div data-testid="remote-hosts">
      <h3>Hosts</h3>
      <ul class="devices">
        {hosts.map((h) => (
          <li key={h.hostID} data-testid="remote-host" data-current={h.hostID === current ? "yes" : "no"}>
            <strong>{hostLabel(h)}</strong> <span class="muted">via {h.relay}, this device named “{h.name}” there</span>
            {h.hostID === current ? (
              <span class="badge"> this one</span>
            ) : (
              <button
                class="ghost small"
                data-testid="switch-host"
                onClick={() => {
                  setCurrentHost(h.hostID);
                  location.reload();
                }}
              >
                Switch
              </button>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function RemotePanel({ store }: { store: CockpitStore }) {
  return store.remote ? <RemoteHosts current={store.remote.host.hostID} /> : <PairPhone store={store} />;
}
