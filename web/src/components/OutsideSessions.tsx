/** The new-session sheet's "from outside Nucleic" list: the person's own Claude Code and Codex
 *  sessions of the project (`outsideSessions`), one of which the sheet can carry on instead. */
import { useEffect, useState } from "preact/hooks";

import type { OutsideSession, OutsideSessions as Found } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText } from "../store";

const BACKEND_LABEL: Record<string, string> = { claudeCode: "Claude Code", codex: "Codex", gemini: "Gemini", simulated: "simulated" };

/** When a session was last active, as "5 min ago" / "3 h ago" / the date. */
function ago(at: string | null | undefined): string {
  if (!at) return "";
  const ms = Date.now() - Date.parse(at);
  if (!Number.isFinite(ms)) return "";
  if (ms < 60_000) return "just now";
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min ago`;
  if (ms < 86_400_000) return `${Math.round(ms / 3_600_000)} h ago`;
  return new Date(at).toLocaleDateString();
}

/** Why a session cannot be carried on, or null when it can. */
export function notAdoptable(s: OutsideSession): string | null {
  if (s.adoptable) return null;
  return `${BACKEND_LABEL[s.backend] ?? s.backend} sessions cannot be carried on yet: the host cannot fork their conversation`;
}

export function OutsideSessions({
  store,
  projectID,
  chosen,
  onChoose,
}: {
  store: CockpitStore;
  projectID: string;
  chosen: OutsideSession | null;
  onChoose: (session: OutsideSession | null) => void;
}) {
  const [found, setFound] = useState<Found | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setFound(null);
    setError(null);
    if (!projectID || store.link !== "online") return;
    let stale = false;
    store
      .request({ type: "intent", intent: { kind: "outsideSessions", projectID } })
      .then((reply) => {
        if (stale) return;
        const result = resultOf(reply, "outsideSessions");
        if (result) setFound(result);
        else setError("the host did not answer with a list");
      })
      .catch((e) => !stale && setError(errorText(e)));
    return () => {
      stale = true;
    };
  }, [projectID, store.link]);

  if (error) return <p class="muted" data-testid="outside-sessions-error">Sessions from outside Nucleic: {error}</p>;
  if (!found || found.sessions.length === 0) return null;
  return (
    <details class="outside-sessions" data-testid="outside-sessions" open={chosen !== null}>
      <summary>
        Carry on a session from outside Nucleic ({found.sessions.length}
        {found.truncated ? "+" : ""})
      </summary>
      <ul>
        {found.sessions.map((s) => {
          const why = notAdoptable(s);
          const selected = chosen?.id === s.id;
          return (
            <li key={`${s.backend}:${s.id}`}>
              <button
                type="button"
                class={selected ? "outside-session selected" : "outside-session"}
                disabled={why !== null}
                title={why ?? s.path}
                aria-pressed={selected}
                data-testid="outside-session"
                data-outside={s.id}
                onClick={() => onChoose(selected ? null : s)}
              >
                <span class="outside-title">{s.title ?? "(untitled)"}</span>
                <span class="muted">
                  {BACKEND_LABEL[s.backend] ?? s.backend} · {s.turns}
                  {s.turnsExact ? "" : "+"} turn{s.turns === 1 ? "" : "s"}
                  {s.lastAt ? ` · ${ago(s.lastAt)}` : ""}
                  {s.live ? ` · open in ${s.live.program} (pid ${s.live.pid}): carried on as a fork` : ""}
                  {s.cwdExists ? "" : " · its folder is gone"}
                </span>
              </button>
            </li>
          );
        })}
      </ul>
      {found.truncated && <p class="muted">The search stopped early: {found.truncated}</p>}
    </details>
  );
}
