/** The inbox pane: every open approval and question of every session, each answerable in place
 *  (with its risk and the critical second confirmation), without opening the session. */
import { useState } from "preact/hooks";

import { inboxItems, useInboxSessions } from "../inbox";
import { href } from "../route";
import type { CockpitStore } from "../store";
import { PendingRequest } from "./PlanQuestions";

export function Inbox({ store, onBack }: { store: CockpitStore; onBack?: () => void }) {
  const [, setTick] = useState(0);
  const [refused, setRefused] = useState<Record<string, string>>({});
  useInboxSessions(store, () => setTick((t) => t + 1));
  const items = inboxItems(store);
  return (
    <main class="pane inbox-pane" data-testid="inbox" aria-label="Inbox">
      <header class="pane-head">
        {onBack && (
          <button class="ghost small" onClick={onBack} aria-label="Back to sessions" data-testid="back">
            ←
          </button>
        )}
        <h1>Inbox</h1>
        <span class="badge pending" data-testid="inbox-count">
          {items.length}
        </span>
      </header>
      <div class="scroll">
        {items.length === 0 && <p class="empty">Nothing waits for you.</p>}
        <ul class="inbox-list">
          {items.map((item) => {
            const caps = item.session ? (store.backend(item.session.backend)?.capabilities ?? null) : null;
            const key = `${item.hostID}/${item.sessionID}/${item.request.requestID}`;
            return (
              <li key={key} class="inbox-item" data-testid="inbox-item" data-session={item.sessionID} data-request={item.request.requestID} data-risk={item.request.risk ?? ""}>
                <div class="inbox-where">
                  {item.projectName && <span class="project">{item.projectName}</span>}
                  <a href={href({ sessionID: item.sessionID })}>{item.session?.title ?? item.sessionID}</a>
                  {item.question && <span class="badge">question</span>}
                </div>
                {refused[key] && (
                  <p class="outcome" role="status">
                    {refused[key]}
                  </p>
                )}
                <PendingRequest
                  store={store}
                  sessionID={item.sessionID}
                  request={item.request}
                  more={0}
                  caps={caps}
                  onRefused={(m) => setRefused((r) => ({ ...r, [key]: m }))}
                  cwd={store.transcript(item.sessionID).facts.cwd}
                />
              </li>
            );
          })}
        </ul>
      </div>
    </main>
  );
}
