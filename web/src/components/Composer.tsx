/** The follow-up composer (Enter sends, Shift+Enter breaks the line). */
import { useState } from "preact/hooks";

import { type CockpitStore, errorText } from "../store";

export function Composer({ store, sessionID, disabledReason }: { store: CockpitStore; sessionID: string; disabledReason: string | null }) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const send = async () => {
    if (!text.trim()) return;
    setBusy(true);
    setError(null);
    try {
      await store.request({ type: "sendInput", sessionID, text });
      setText("");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const disabled = busy || store.link !== "online" || disabledReason !== null;
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
        placeholder={disabledReason ?? "Message the agent…"}
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
        Send
      </button>
    </form>
  );
}
