/** The follow-up composer (Enter sends, Shift+Enter breaks the line). Offline, the text is
 *  queued (`pending/`) with the seq it was written against, and sent on reconnect unless the
 *  session moved on meanwhile. */
import { useState } from "preact/hooks";

import { type CockpitStore, errorText } from "../store";

/** Queues a follow-up written offline: `queue` while a turn runs (meant to follow it),
 *  `resume` when the agent has ended, `input` otherwise. */
async function queueInput(store: CockpitStore, sessionID: string, text: string): Promise<void> {
  const facts = store.transcript(sessionID).facts;
  const status = store.sessions.get(sessionID)?.status ?? facts.status;
  const kind = status === "running" ? "queue" : status === "finished" || status === "error" ? "resume" : "input";
  await store.pending.addInput(kind, sessionID, text, store.connection.cursor(sessionID), facts.backendSessionID ?? null);
}

export function Composer({ store, sessionID, disabledReason }: { store: CockpitStore; sessionID: string; disabledReason: string | null }) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const send = async () => {
    if (!text.trim()) return;
    setBusy(true);
    setError(null);
    try {
      if (store.link !== "online") {
        await queueInput(store, sessionID, text);
        setText("");
        return;
      }
      store.pending.noteSent(sessionID, text);
      await store.request({ type: "sendInput", sessionID, text });
      setText("");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const offline = store.link !== "online";
  const disabled = busy || disabledReason !== null;
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <textarea
        rows={2}
        value={text}
        placeholder={disabledReason ?? (offline ? "Offline: your message is queued and sent on reconnect…" : "Message the agent…")}
        disabled={disabledReason !== null}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            void send();
          }
        }}
        data-testid="composer"
      />
      <button class="primary" type="submit" disabled={disabled || !text.trim()} data-testid="send">
        {offline ? "Queue" : "Send"}
      </button>
    </form>
  );
}
