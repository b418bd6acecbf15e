/** The pending actions: what waits for the link, and what the person must decide about — a
 *  conflict (resend, edit, drop) or a failure (retry, drop). */
import { useState } from "preact/hooks";

import { describe } from "../pending/queue";
import type { PendingAction } from "../pending/rules";
import { type CockpitStore, errorText } from "../store";

function editableText(a: PendingAction): string {
  if (a.kind === "start") return a.session.prompt;
  if (a.kind === "rename") return a.title;
  return a.text;
}

function Item({ store, action }: { store: CockpitStore; action: PendingAction }) {
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
    <li class={`pending-item ${action.state}`} data-testid="pending-item" data-state={action.state} data-kind={action.kind}>
      <div>
        <strong>{describe(action)}</strong>
        {title && <span class="small muted"> · {title}</span>}
      </div>
      {waiting && <div class="small muted">{action.state === "sending" ? "Sending…" : "Waits for the host"}</div>}
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

export function PendingTray({ store }: { store: CockpitStore }) {
  const actions = store.pending.actions;
  if (actions.length === 0 && !store.pending.lastError) return null;
  const decide = actions.filter((a) => a.state === "conflict" || a.state === "failed").length;
  return (
    <section class={`pending-tray${decide > 0 ? " attention" : ""}`} aria-label="Pending actions" data-testid="pending-tray">
      <h2 class="small">
        {decide > 0 ? `${decide} pending action${decide === 1 ? "" : "s"} need${decide === 1 ? "s" : ""} you` : `${actions.length} waiting for the host`}
      </h2>
      {store.pending.lastError && (
        <p class="error" role="alert">
          {store.pending.lastError}
        </p>
      )}
      <ul>
        {actions.map((a) => (
          <Item key={a.id} store={store} action={a} />
        ))}
      </ul>
    </section>
  );
}
