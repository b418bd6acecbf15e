/** Push for this device: an opt-in button, quiet hours, turning it off. What arrives is only
 *  "A session needs you"; tapping it opens the session. */
import { useEffect, useState } from "preact/hooks";

import { deviceTimeZone, disablePush, enablePush, pushSettings, pushSupport, quietHours } from "../offline/push";
import type { PushSettings, QuietHours } from "../protocol.gen";
import { type CockpitStore, errorText } from "../store";

function hhmm(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`;
}

/** The window as stored: minutes on the clock of its time zone. */
function storedWindow(q: QuietHours): [string, string] {
  return [hhmm(q.fromMinute), hhmm(q.toMinute)];
}

export function PushSettingsPanel({ store }: { store: CockpitStore }) {
  const [settings, setSettings] = useState<PushSettings | null>(null);
  const [from, setFrom] = useState("22:00");
  const [to, setTo] = useState("07:00");
  const [quiet, setQuiet] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const support = pushSupport();
  useEffect(() => {
    if (store.link !== "online") return;
    pushSettings(store)
      .then((s) => {
        setSettings(s);
        if (s.quietHours) {
          const [f, t] = storedWindow(s.quietHours);
          setFrom(f);
          setTo(t);
          setQuiet(true);
        }
      })
      .catch((e) => setError(errorText(e)));
  }, [store.link]);
  const act = async (f: () => Promise<PushSettings>) => {
    setBusy(true);
    setError(null);
    try {
      setSettings(await f());
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const window = quiet ? quietHours(from, to) : null;
  if (support === "unsupported") return <p class="muted" data-testid="push-unsupported">This browser cannot receive push notifications.</p>;
  return (
    <div class="push-settings" data-testid="push-settings">
      <h3>Notifications on this device</h3>
      <p class="muted">
        When a session needs you (an approval, a question, a finished or failed run), this device gets “A session needs
        you” — nothing about the session travels through the push service.
      </p>
      {support === "denied" && <p class="error">Notifications are blocked for this site in the browser's settings.</p>}
      <label class="quiet">
        <input type="checkbox" checked={quiet} onChange={(e) => setQuiet((e.target as HTMLInputElement).checked)} data-testid="quiet-hours" />
        Quiet hours from{" "}
        <input type="time" value={from} onChange={(e) => setFrom((e.target as HTMLInputElement).value)} disabled={!quiet} /> to{" "}
        <input type="time" value={to} onChange={(e) => setTo((e.target as HTMLInputElement).value)} disabled={!quiet} />
        <span class="muted" data-testid="quiet-zone">
          {" "}
          ({settings?.quietHours && settings.quietHours.timeZone !== deviceTimeZone()
            ? `${settings.quietHours.timeZone}; saving sets ${deviceTimeZone()}`
            : deviceTimeZone()}
          )
        </span>
      </label>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="actions">
        <button
          class="primary small"
          disabled={busy || store.link !== "online" || support !== "supported"}
          onClick={() => act(() => enablePush(store, window))}
          data-testid="enable-push"
        >
          {settings?.subscribed ? "Save" : "Notify this device"}
        </button>
        {settings?.subscribed && (
          <button class="ghost small" disabled={busy || store.link !== "online"} onClick={() => act(() => disablePush(store))} data-testid="disable-push">
            Turn off
          </button>
        )}
      </div>
    </div>
  );
}
