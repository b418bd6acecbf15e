/** The new-session sheet: project, base branch, backend, model, permission mode, first prompt. */
import { useEffect, useState } from "preact/hooks";

import type { Backend, OutsideSession } from "../protocol.gen";
import { resultOf } from "../results";
import { go } from "../route";
import { type CockpitStore, errorText } from "../store";
import { OutsideSessions } from "./OutsideSessions";
import { MODES } from "./RulesSheet";

export function NewSessionSheet({ store, onClose }: { store: CockpitStore; onClose: () => void }) {
  const projects = store.projects;
  const [chosen, setProjectID] = useState<string | null>(null);
  // A session from outside Nucleic to carry on instead of starting afresh (its backend, model
  // and history are its own; only the policy mode and the next prompt are chosen here).
  const [adopting, setAdopting] = useState<OutsideSession | null>(null);
  // Carry it on in the checkout it came from (the conversation itself, under a lock) instead of a fork in a new worktree.
  const [inPlace, setInPlace] = useState(false);
  // The lists may arrive after the sheet opened: default to the first project until one is chosen.
  const projectID = chosen ?? projects[0]?.projectID ?? "";
  const project = projects.find((p) => p.projectID === projectID);
  const available = store.backends.filter((b) => b.available);
  const [chosenBackend, setBackend] = useState<Backend | null>(null);
  const backend: Backend =
    chosenBackend ??
    (project && available.some((b) => b.backend === project.defaultBackend) ? project.defaultBackend : available[0]?.backend) ??
    "simulated";
  const info = store.backend(backend);
  const [baseRef, setBaseRef] = useState("");
  // The project's branches, most recent first (free text stays allowed: a tag or a SHA).
  const [branches, setBranches] = useState<string[]>([]);
  useEffect(() => {
    if (!projectID || store.link !== "online") return;
    let stale = false;
    store
      .request({ type: "listBranches", projectID })
      .then((r) => !stale && r.type === "branches" && setBranches(r.branches))
      .catch(() => !stale && setBranches([]));
    return () => {
      stale = true;
    };
  }, [projectID, store.link]);
  const [model, setModel] = useState("");
  const [mode, setMode] = useState("");
  // The policy mode; "" starts in the project's default (the simulated agent has no policy).
  const [policyMode, setPolicyMode] = useState("");
  // Plan first: the backend's `plan` permission mode (the session is read-only until a plan is approved).
  const [planFirst, setPlanFirst] = useState(false);
  const canPlan = (info?.permissionModes ?? []).includes("plan");
  const [prompt, setPrompt] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!projectID || !prompt.trim()) return;
    setBusy(true);
    setError(null);
    try {
      if (adopting) {
        const intent = {
          kind: "adoptSession" as const,
          projectID,
          session: adopting.id,
          prompt,
          mode: policyMode || null,
          inPlace: inPlace && !adopting.live,
        };
        const result = resultOf(await store.request({ type: "intent", intent }), "session");
        if (result) {
          store.sessions.set(result.sessionID, result);
          go({ sessionID: result.sessionID });
        } else onClose();
        return;
      }
      const session = {
        projectID,
        baseRef: baseRef.trim() || null,
        backend,
        model: model.trim() || null,
        permissionMode: planFirst && canPlan ? "plan" : mode || null,
        mode: backend !== "simulated" && policyMode ? policyMode : null,
        prompt,
      };
      if (store.link !== "online") {
        // Queued: started on reconnect if the project and options are still valid.
        await store.pending.addStart(session);
        onClose();
        return;
      }
      const reply = await store.request({ type: "intent", intent: { kind: "newSession", ...session } });
      const result = resultOf(reply, "session");
      if (result) {
        store.sessions.set(result.sessionID, result);
        go({ sessionID: result.sessionID });
      } else onClose();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="sheet-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <form class="sheet" onSubmit={submit} data-testid="new-session-sheet" aria-label="New session">
        <h2>New session</h2>
        {projects.length === 0 && <p class="error">No projects. Add one with <code>nucleic project add &lt;repo&gt;</code>.</p>}
        <label>
          Project
          <select
            value={projectID}
            onChange={(e) => {
              setProjectID(e.currentTarget.value);
              setAdopting(null);
            }}
            name="project"
          >
            {projects.map((p) => (
              <option value={p.projectID} key={p.projectID}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <OutsideSessions store={store} projectID={projectID} chosen={adopting} onChoose={setAdopting} />
        {adopting ? (
          <>
            <p class="adopting" data-testid="adopting">
              {inPlace && !adopting.live
                ? `Carrying on “${adopting.title ?? adopting.id}” in place, in ${adopting.cwd}: the conversation itself goes on (not forked), under a lock no other host takes until you hand it over.`
                : `Carrying on “${adopting.title ?? adopting.id}” in a new worktree off the checkout's current commit: its history comes first and its conversation is forked, so the original stays as it was.`}
            </p>
            <label class="check" title={adopting.live ? `A live ${adopting.live.program} (pid ${adopting.live.pid}) holds it: only a fork` : undefined}>
              <input
                type="checkbox"
                name="inPlace"
                data-testid="adopt-in-place"
                checked={inPlace && !adopting.live}
                disabled={adopting.live != null}
                onChange={(e) => setInPlace(e.currentTarget.checked)}
              />
              In place, in the checkout it came from{adopting.live ? ` (not while ${adopting.live.program} pid ${adopting.live.pid} holds it)` : ""}
            </label>
          </>
        ) : (
          <>
        <label>
          Base branch
          <input value={baseRef} list="branches" placeholder={project?.defaultBranch ?? "main"} onInput={(e) => setBaseRef(e.currentTarget.value)} name="base" data-testid="base-branch" />
          <datalist id="branches">
            {branches.map((b) => (
              <option value={b} key={b} />
            ))}
          </datalist>
        </label>
        <div class="row">
          <label>
            Backend
            <select value={backend} onChange={(e) => setBackend(e.currentTarget.value as Backend)} name="backend">
              {store.backends.map((b) => (
                <option value={b.backend} key={b.backend} disabled={!b.available}>
                  {b.backend}
                  {b.available ? "" : " (not installed)"}
                </option>
              ))}
            </select>
          </label>
          <label>
            Model
            <input value={model} list="models" placeholder="default" onInput={(e) => setModel(e.currentTarget.value)} name="model" />
            <datalist id="models">
              {(info?.models ?? []).map((m) => (
                <option value={m} key={m} />
              ))}
            </datalist>
          </label>
          <label>
            Permission mode
            <select value={mode} onChange={(e) => setMode(e.currentTarget.value)} name="mode" disabled={planFirst && canPlan}>
              <option value="">default</option>
              {(info?.permissionModes ?? []).filter((m) => m !== "default").map((m) => (
                <option value={m} key={m}>
                  {m}
                </option>
              ))}
            </select>
          </label>
          {backend !== "simulated" && (
            <PolicyModeSelect value={policyMode} onChange={setPolicyMode} />
          )}
        </div>
        {canPlan && (
          <label class="check" title="The agent first writes a plan; you approve it (choosing the mode it runs in) or send feedback">
            <input type="checkbox" checked={planFirst} onChange={(e) => setPlanFirst(e.currentTarget.checked)} name="plan" data-testid="plan-first" /> Plan first, then confirm
          </label>
        )}
          </>
        )}
        {adopting && (
          <PolicyModeSelect value={policyMode} onChange={setPolicyMode} />
        )}
        <label>
          {adopting ? "Next prompt" : "First prompt"}
          <textarea value={prompt} rows={5} onInput={(e) => setPrompt(e.currentTarget.value)} name="prompt" required />
        </label>
        {error && <p class="error" role="alert">{error}</p>}
        <footer>
          <button type="button" class="ghost" onClick={onClose}>
            Cancel
          </button>
          <button
            type="submit"
            class="primary"
            disabled={busy || !prompt.trim() || !projectID || (adopting !== null && store.link !== "online")}
            data-testid="create-session"
          >
            {busy ? "Starting…" : adopting ? "Carry it on" : store.link === "online" ? "Start session" : "Queue the start"}
          </button>
        </footer>
      </form>
    </div>
  );
}

/** The policy mode a session starts in ("" = the project's default). */
function PolicyModeSelect({ value, onChange }: { value: string; onChange: (mode: string) => void }) {
  return (
    <label>
      Mode
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)} name="policyMode" data-testid="new-session-mode">
        <option value="">project default</option>
        {MODES.map((m) => (
          <option value={m} key={m}>
            {m}
          </option>
        ))}
      </select>
    </label>
  );
}
