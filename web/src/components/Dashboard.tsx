/** Every session of every project at a glance, what needs a person first. */
import { href } from "../route";
import { byUrgency, type CockpitStore } from "../store";
import { SessionMeta, StatusBadge } from "./Badges";

export function Dashboard({ store, onBack }: { store: CockpitStore; onBack?: () => void }) {
  const sessions = [...store.sessions.values()].sort(byUrgency);
  const projects = new Map(store.projects.map((p) => [p.projectID, p.name]));
  const count = (f: (s: (typeof sessions)[number]) => boolean) => sessions.filter(f).length;
  return (
    <main class="pane dashboard" data-testid="dashboard">
      <header class="pane-head">
        {onBack && (
          <button class="ghost small" onClick={onBack} aria-label="Back">
            ←
          </button>
        )}
        <h1>All sessions</h1>
        <span class="summary">
          {count((s) => s.pendingApprovals > 0 || s.status === "awaiting-approval")} need approval ·{" "}
          {count((s) => s.status === "awaiting-input")} need input · {count((s) => s.status === "running")} running
        </span>
      </header>
      <div class="scroll">
        {sessions.length === 0 && <p class="empty">No sessions yet.</p>}
        <div class="cards">
          {sessions.map((s) => (
            <a class={`card status-${s.status}`} key={s.sessionID} href={href({ sessionID: s.sessionID })} data-testid="dashboard-card" data-status={s.status}>
              <span class="title">{s.title || "untitled"}</span>
              <span class="project">{(s.projectID && projects.get(s.projectID)) || "—"}</span>
              <span class="row2">
                <StatusBadge status={s.status} />
                <span class="backend">{s.backend}</span>
                <SessionMeta s={s} />
              </span>
              {s.worktree && <span class="branch">{s.worktree.branch}</span>}
            </a>
          ))}
        </div>
      </div>
    </main>
  );
}
