/** The rules sheet: the rules that apply to a session (or project) by scope — Nucleic's
 *  removable, Claude Code's files read-only with their path — adding one (allow / ask / deny in
 *  this session, the project or every project), and the session's mode and the project's
 *  default mode. Everything goes through the host's intents (`host::rules`, as `nucleic rules`). */
import { useEffect, useState } from "preact/hooks";

import type { RuleBehaviour, RuleEntry, RuleList, RuleScope, RuleSource } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText } from "../store";

export const MODES = ["readonly", "edit", "full"] as const;

const SOURCE_LABEL: Record<RuleSource, string> = {
  session: "This session",
  nucleicProject: "Nucleic · project",
  nucleicHost: "Nucleic · every project",
  localSettings: "Claude · project local",
  projectSettings: "Claude · project",
  userSettings: "Claude · user",
  policySettings: "Claude · managed",
};

/** Which Nucleic scope a removable rule lives in. */
function scopeOf(source: RuleSource): RuleScope | null {
  if (source === "session") return "session";
  if (source === "nucleicProject") return "project";
  if (source === "nucleicHost") return "host";
  return null;
}

export function RulesSheet({ store, sessionID, projectID, onClose }: { store: CockpitStore; sessionID?: string; projectID?: string; onClose: () => void }) {
  const [list, setList] = useState<RuleList | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [rule, setRule] = useState("");
  const [behaviour, setBehaviour] = useState<RuleBehaviour>("allow");
  const [scope, setScope] = useState<RuleScope>("project");
  const target = { sessionID: sessionID ?? null, projectID: sessionID ? null : (projectID ?? null) };
  const offline = store.link !== "online";

  const load = async () => {
    try {
      const reply = await store.request({ type: "intent", intent: { kind: "listRules", ...target } });
      const rules = resultOf(reply, "rules");
      if (rules) setList(rules);
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => {
    if (store.link === "online") void load();
  }, [sessionID, projectID, store.link]);

  const run = async (intent: Parameters<CockpitStore["request"]>[0]) => {
    setError(null);
    try {
      await store.request(intent);
      await load();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    }
  };
  const add = async (e: Event) => {
    e.preventDefault();
    if (!rule.trim()) return;
    if (await run({ type: "intent", intent: { kind: "addRule", ...target, scope, behaviour, rule: rule.trim() } })) setRule("");
  };
  const remove = (r: RuleEntry) => {
    const s = scopeOf(r.source);
    if (s) void run({ type: "intent", intent: { kind: "removeRule", ...target, scope: s, rule: r.rule } });
  };
  const sessionProject = sessionID ? store.sessions.get(sessionID)?.projectID : projectID;

  const groups = new Map<RuleSource, RuleEntry[]>();
  for (const r of list?.rules ?? []) groups.set(r.source, [...(groups.get(r.source) ?? []), r]);

  return (
    <div class="sheet-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="sheet rules-sheet" data-testid="rules-sheet" role="dialog" aria-label="Rules">
        <h2>Rules</h2>
        <div class="row">
          {sessionID && list?.sessionMode && (
            <label>
              This session's mode
              <select
                value={list.sessionMode}
                disabled={offline}
                onChange={(e) => void run({ type: "intent", intent: { kind: "setMode", sessionID, mode: e.currentTarget.value } })}
                data-testid="rules-session-mode"
              >
                {MODES.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
          )}
          {sessionProject && list?.projectMode && (
            <label>
              New sessions start in
              <select
                value={list.projectMode}
                disabled={offline}
                onChange={(e) => void run({ type: "intent", intent: { kind: "setProjectMode", projectID: sessionProject, mode: e.currentTarget.value } })}
                data-testid="project-mode"
              >
                {MODES.map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>
            </label>
          )}
        </div>
        {!list && !error && <p class="empty small">Loading…</p>}
        {list && list.rules.length === 0 && <p class="empty small">No rules: the mode decides.</p>}
        {[...groups.entries()].map(([source, rules]) => (
          <section key={source} class="rule-group" data-testid={`rules-${source}`}>
            <h3>
              {SOURCE_LABEL[source]}
              {rules[0]?.path && <code class="path small">{rules[0].path}</code>}
            </h3>
            <ul>
              {rules.map((r) => (
                <li key={`${r.behaviour}:${r.rule}`} data-testid="rule">
                  <span class={`behaviour ${r.behaviour}`}>{r.behaviour}</span> <code>{r.rule}</code>
                  {r.removable ? (
                    <button class="small ghost danger" disabled={offline} onClick={() => remove(r)} aria-label={`Remove ${r.rule}`} data-testid="remove-rule">
                      Remove
                    </button>
                  ) : (
                    <span class="small muted"> read-only</span>
                  )}
                </li>
              ))}
            </ul>
          </section>
        ))}
        {(list?.problems ?? []).map((p) => (
          <p class="error small" key={p}>
            {p}
          </p>
        ))}
        <form onSubmit={add} class="row add-rule">
          <select value={behaviour} onChange={(e) => setBehaviour(e.currentTarget.value as RuleBehaviour)} name="behaviour" aria-label="Behaviour">
            <option value="allow">allow</option>
            <option value="ask">ask</option>
            <option value="deny">deny</option>
          </select>
          <input value={rule} placeholder="Bash(npm test)" onInput={(e) => setRule(e.currentTarget.value)} name="rule" aria-label="Rule" />
          <select value={scope} onChange={(e) => setScope(e.currentTarget.value as RuleScope)} name="scope" aria-label="Scope">
            {sessionID && <option value="session">this session</option>}
            {sessionProject && <option value="project">this project</option>}
            <option value="host">every project</option>
          </select>
          <button type="submit" class="primary small" disabled={offline || !rule.trim()} data-testid="add-rule">
            Add
          </button>
        </form>
        {error && (
          <p class="error" role="alert" data-testid="rules-error">
            {error}
          </p>
        )}
        <footer>
          <button type="button" class="ghost" onClick={onClose} data-testid="close-rules">
            Close
          </button>
        </footer>
      </div>
    </div>
  );
}
