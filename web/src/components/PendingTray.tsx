/** The pending actions: what waits for the link, and what the person must decide about — a
 *  conflict (resend, edit, drop) or a failure (retry, drop). With several hosts, every host's
 *  are listed, each labelled with its host and handled by that host's own queue. */
import { useState } from "preact/hooks";

import { describe } from "../pending/queue";
import type { PendingAction } from "../pending/rules";
import type { FleetHost } from "../remote/fleet";
import { type CockpitStore, errorText } from "../store";

function editableText(a: PendingAction): string {
  if (a.kind === "start") return a.session.prompt;
  if (a.kind === "rename") return a.title;
  return a.text;
}

/** `host`: the label of the action's host when the page is on another one. */
function Item({ store, action, host }: { store: CockpitStore; action: PendingAction; host?: string }) {
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const q = store.pending;
  const run = async (f: () => Promise<void>) => {
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(errorText(e));
    }
  };
  const title = action.kind === "start" ? null : store.sessions.get(action.sessionID)?.title;
  const waiting = action.state === "queued" || action.state === "sending";
  return (
    <li
      class={`pending-item ${action.state}`}
      data-testid="pending-item"
      data-state={action.state}
      data-kind={action.kind}
      data-host={store.hostID}
    >
      <div>
        {host && (
          <span class="badge" data-testid="pending-host">
            {host}
          </span>
        )}{" "}
        <strong>{describe(action)}</strong>
        {title && <span class="small muted"> · {title}</span>}
      </div>
      {waiting && <div class="small muted">{action.state === "sending" ? "Sending…" : `Waits for ${host ?? "the host"}`}</div>}
      {action.reason && (
        <div class="reason" role="status" data-testid="pending-reason">
          {action.reason}
        </div>
      )}
      {editing !== null && (
        <textarea rows={2} value={editing} onInput={(e) => setEditing(e.currentTarget.value)} data-testid="pending-edit-text" />
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="actions">
        {!waiting && editing === null && (
          <>
            <button class="small primary" onClick={() => run(() => q.resend(action.id))} data-testid="pending-resend">
              {action.state === "failed" ? "Retry" : "Send anyway"}
            </button>
            <button class="small" onClick={() => setEditing(editableText(action))} data-testid="pending-edit">
              Edit
            </button>
          </>
        )}
        {editing !== null && (
          <>
            <button
              class="small primary"
              onClick={() => run(() => q.resend(action.id, action.kind === "rename" ? { title: editing } : { text: editing }))}
              data-testid="pending-send-edited"
            >
              Send edited
            </button>
            <button class="small ghost" onClick={() => setEditing(null)}>
              Back
            </button>
          </>
        )}
        <button class="small danger ghost" onClick={() => run(() => q.drop(action.id))} data-testid="pending-drop">
          Drop
        </button>
      </div>
    </li>
  );
}

/** `hosts`: the fleet (the page's host first); a page without one passes its store alone. */
export function PendingTray({ hosts }: { hosts: Pick<FleetHost, "store" | "label" | "primary">[] }) {
  const all = hosts.flatMap((h) => h.store.pending.actions.map((a) => ({ h, a })));
  const errors = hosts.map((h) => h.store.pending.lastError).filter((e): e is string => !!e);
  if (all.length === 0 && errors.length === 0) return null;
  const decide = all.filter(({ a }) => a.state === "conflict" || a.state === "failed").length;
  return (
    <section class={`pending-tray${decide > 0 ? " attention" : ""}`} aria-label="Pending actions" data-testid="pending-tray">
      <h2 class="small">
        {decide > 0 ? `${decide} pending action${decide === 1 ? "" : "s"} need${decide === 1 ? "s" : ""} you` : `${all.length} waiting for the host`}
      </h2>
      {errors.map((e) => (
        <p class="error" role="alert" key={e}>
          {e}
        </p>
      ))}
      <ul>
        {all.map(({ h, a }) => (
          <Item key={a.id} store={h.store} action={a} host={h.primary ? undefined : h.label} />
        ))}
      </ul>
    </section>
  );
}
