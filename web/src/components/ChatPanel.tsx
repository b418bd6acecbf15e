/** The chat bridges in the devices sheet: each bridge (`nucleic chat`) with its state — running,
 *  retrying, its bot token refused, or silent — and the chat users paired with it, each with
 *  "Unpair" (the host stops acting for them at once; they pair again with `nucleic chat pair`). */
import { useEffect, useState } from "preact/hooks";

import type { ChatBridgeSummary, ChatPerson } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText } from "../store";

function stateText(b: ChatBridgeSummary): string {
  if (b.silent) return `silent since ${new Date(b.reportedAt).toLocaleString()} (is \`nucleic chat\` running?)`;
  switch (b.state) {
    case "running":
      return "running";
    case "retrying":
      return "retrying";
    case "refused":
      return "its credential was refused (a revoked bot token?)";
  }
}

export function ChatPanel({ store }: { store: CockpitStore }) {
  const [bridges, setBridges] = useState<ChatBridgeSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = async () => {
    try {
      const listed = resultOf(await store.request({ type: "intent", intent: { kind: "listChatBridges" } }), "chatBridges");
      if (listed) setBridges(listed.bridges);
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => {
    void load();
  }, [store.link]);
  const unpair = async (p: ChatPerson) => {
    if (!confirm(`Unpair ${p.person}? The host stops acting for them at once; they can pair again with a new code.`)) return;
    setError(null);
    try {
      const after = resultOf(await store.request({ type: "intent", intent: { kind: "unpairChatPerson", person: p.person } }), "chatBridges");
      if (after) setBridges(after.bridges);
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (bridges === null || bridges.length === 0) return error ? <p class="error" role="alert">{error}</p> : null;
  return (
    <div data-testid="chat-bridges">
      <h3>Chat</h3>
      {error && <p class="error" role="alert">{error}</p>}
      <ul class="devices">
        {bridges.map((b) => (
          <li key={b.bridge} data-testid="chat-bridge" data-state={b.silent ? "silent" : b.state}>
            <strong>{b.bridge}</strong> <span class="muted">{stateText(b)}</span>
            {b.lastError && <div class="muted" data-testid="chat-bridge-error">{b.lastError}</div>}
            <div class="muted">
              {b.strangersIgnored} messages from strangers ignored · {b.outboxQueued} waiting to be sent
            </div>
            <ul class="devices">
              {b.paired.map((p) => (
                <li key={p.person} data-testid="chat-person">
                  <strong>{p.person}</strong> <span class="muted">paired {new Date(p.pairedAt).toLocaleString()}</span>
                  <button class="ghost small" onClick={() => unpair(p)} disabled={store.link !== "online"} data-testid="unpair-chat-person">
                    Unpair
                  </button>
                </li>
              ))}
              {b.paired.length === 0 && <li class="muted">nobody paired</li>}
            </ul>
          </li>
        ))}
      </ul>
    </div>
  );
}
