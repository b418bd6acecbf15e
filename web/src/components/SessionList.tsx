/** The left pane: projects → sessions with live status, pending approvals, cost, activity. */
import type { SessionSummary } from "../protocol.gen";
import { go, href } from "../route";
import { inboxCount } from "../inbox";
import { byUrgency, type CockpitStore } from "../store";
import { SessionMeta, StatusBadge } from "./Badges";
import { NotifyButton } from "./NotifyButton";

export function SessionList({
  store,
  selected,
  onCollapse,
}: {
  store: CockpitStore;
  selected: string | null;
  onCollapse?: () => void;
}) {
  const sessions = [...store.sessions.values()];
  const byProject = new Map<string, SessionSummary[]>();
  for (const s of sessions) {
    const key = s.projectID ?? "";
    let list = byProject.get(key);
    if (!list) byProject.set(key, (list = []));
    list.push(s);
  }
  const needYou = sessions.filter((s) => s.pendingApprovals > 0 || s.status === "awaiting-approval").length;
  const groups = [
    ...store.projects.map((p) => ({ id: p.projectID, name: p.name, root: p.root })),
    ...(byProject.has("") ? [{ id: "", name: "Outside projects", root: "" }] : []),
  ];
  return (
    <nav class="pane list-pane" aria-label="Sessions" data-testid="session-list">
      <header class="pane-head">
        <strong class="brand">Nucleic</strong>
        <a class="button small" href={href({ inbox: true })} data-testid="open-inbox" aria-label={`Inbox: ${inboxCount(store)} waiting`}>
          Inbox{inboxCount(store) > 0 && <span class="badge pending" data-testid="inbox-badge">{inboxCount(store)}</span>}
        </a>
        <a class="button small" href={href({ dashboard: true })} data-testid="open-dashboard">
          All{needYou > 0 && <span class="badge pending">{needYou}</span>}
        </a>
        <button class="primary small" onClick={() => go({ newSession: true })} data-testid="new-session" disabled={store.link === "signedOut"}>
          New
        </button>
        <NotifyButton />
        {onCollapse && (
          <button class="ghost small" title="Collapse" onClick={onCollapse} data-testid="collapse-list">
            ⟨
          </button>
        )}
      </header>
      <div class="scroll">
        {groups.length === 0 && (
          <p class="empty">{store.link === "online" ? "No projects yet. Add one with `nucleic project add <repo>`." : "Loading…"}</p>
        )}
        {groups.map((g) => {
          const list = (byProject.get(g.id) ?? []).sort(byUrgency);
          return (
            <section class="project" key={g.id} data-project={g.name}>
              <h2 title={g.root}>{g.name}</h2>
              {list.length === 0 && <p class="empty small">No sessions.</p>}
              <ul>
                {list.map((s) => (
                  <li key={s.sessionID}>
                    <a
                      class={`session-row${s.sessionID === selected ? " selected" : ""}`}
                      href={href({ sessionID: s.sessionID })}
                      data-testid="session-row"
                      data-session={s.sessionID}
                      data-status={s.status}
                    >
                      <span class="title">{s.title || "untitled"}</span>
                      <span class="row2">
                        <StatusBadge status={s.status} />
                        <span class="backend">{s.backend}</span>
                        <SessionMeta s={s} />
                      </span>
                    </a>
                  </li>
                ))}
              </ul>
            </section>
          );
        })}
      </div>
      <footer class="pane-foot">
        <button class="ghost small" title="Devices signed in to this host" onClick={() => go({ devices: true })} data-testid="open-devices">
          Devices
        </button>
      </footer>
    </nav>
  );
}
