/** The inbox pane: every open approval and question of every session on every remembered host,
 *  each answerable in place over its host's own channel (with its risk and the critical second
 *  confirmation), without opening the session; a host out of reach says so. */
import { useState } from "preact/hooks";

import { hostsInboxItems, useInboxSessions } from "../inbox";
import { type FleetHost, type HostFleet, listed, reach, useFleet } from "../remote/fleet";
import { setCurrentHost } from "../remote/hosts";
import { href } from "../route";
import type { CockpitStore } from "../store";
import { PendingRequest } from "./PlanQuestions";

function when(ms: number | null): string {
  return ms ? new Date(ms).toLocaleTimeString() : "";
}

/** A host that cannot list its requests right now, and why. */
function HostState({ host }: { host: FleetHost }) {
  const state = reach(host.store);
  if (state === "online") return null;
  const text =
    state === "connecting"
      ? "connecting…"
      : state === "signedOut"
        ? "no longer accepts this device (revoked): pair it again to see its approvals"
        : `unreachable since ${when(host.store.offlineSince)} — its approvals cannot be listed or answered until it is back`;
  return (
    <li class={`inbox-host ${state}`} data-testid="inbox-host" data-host={host.hostID} data-state={state} role="status">
      <strong>{host.label}</strong> {text}
    </li>
  );
}

/** Opens a session of another paired host: that host becomes the page's host. */
function openElsewhere(hostID: string, sessionID: string): void {
  setCurrentHost(hostID);
  location.hash = href({ sessionID });
  location.reload();
}

export function Inbox({ store, fleet, onBack }: { store: CockpitStore; fleet?: HostFleet; onBack?: () => void }) {
  const [, setTick] = useState(0);
  const [refused, setRefused] = useState<Record<string, string>>({});
  const hosts = useFleet(fleet, store);
  const several = hosts.length > 1;
  useInboxSessions(
    hosts.map((h) => h.store),
    () => setTick((t) => t + 1),
  );
  const items = hostsInboxItems(listed(hosts));
  const labelOf = new Map(hosts.map((h) => [h.hostID, h]));
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
        {several && (
          <ul class="inbox-hosts">
            {hosts.map((h) => (
              <HostState key={h.hostID} host={h} />
            ))}
          </ul>
        )}
        {items.length === 0 && <p class="empty">{several && hosts.some((h) => reach(h.store) !== "online") ? "Nothing waits for you on the hosts in reach." : "Nothing waits for you."}</p>}
        <ul class="inbox-list">
          {items.map((item) => {
            const on = item.store;
            const host = labelOf.get(item.hostID);
            const caps = item.session ? (on.backend(item.session.backend)?.capabilities ?? null) : null;
            const key = `${item.hostID}/${item.sessionID}/${item.request.requestID}`;
            const title = item.session?.title ?? item.sessionID;
            return (
              <li
                key={key}
                class="inbox-item"
                data-testid="inbox-item"
                data-host={item.hostID}
                data-session={item.sessionID}
                data-request={item.request.requestID}
                data-risk={item.request.risk ?? ""}
              >
                <div class="inbox-where">
                  {several && host && (
                    <span class="host" data-testid="inbox-item-host">
                      {host.label}
                    </span>
                  )}
                  {item.projectName && <span class="project">{item.projectName}</span>}
                  {!host || host.primary ? (
                    <a href={href({ sessionID: item.sessionID })}>{title}</a>
                  ) : (
                    <a
                      href={href({ sessionID: item.sessionID })}
                      onClick={(e) => {
                        e.preventDefault();
                        openElsewhere(item.hostID, item.sessionID);
                      }}
                    >
                      {title}
                    </a>
                  )}
                  {item.question && <span class="badge">question</span>}
                </div>
                {refused[key] && (
                  <p class="outcome" role="status">
                    {refused[key]}
                  </p>
                )}
                <PendingRequest
                  store={on}
                  sessionID={item.sessionID}
                  request={item.request}
                  more={0}
                  caps={caps}
                  onRefused={(m) => setRefused((r) => ({ ...r, [key]: m }))}
                  cwd={on.transcript(item.sessionID).facts.cwd}
                />
              </li>
            );
          })}
        </ul>
      </div>
    </main>
  );
}
