/** Finishing a session's worktree: merge, squash, rebase, discard, keep, rollback (confirmed),
 *  continue, and the handoff command to copy. Nothing happens without a click here. */
import { useState } from "preact/hooks";

import type { Backend, FinishAction } from "../protocol.gen";
import { resultOf } from "../results";
import { go } from "../route";
import { type CockpitStore, errorText } from "../store";
import { useGitFacts } from "./DiffView";
import { PullRequestForm } from "./PullRequest";

export function GitActions({ store, sessionID }: { store: CockpitStore; sessionID: string }) {
  const summary = store.sessions.get(sessionID);
  const { facts, refresh } = useGitFacts(store, sessionID, false);
  const [message, setMessage] = useState(summary?.title ?? "");
  const [updateCheckout, setUpdateCheckout] = useState(false);
  const [forceReason, setForceReason] = useState("");
  const [prompt, setPrompt] = useState("");
  // Continue in the same agent (its conversation forked), or in another one (told the task,
  // a summary and the changes so far: a session stopped by a rate limit, say).
  const [continueIn, setContinueIn] = useState<Backend | "">("");
  const [busy, setBusy] = useState<string | null>(null);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [command, setCommand] = useState<string | null>(null);
  const offline = store.link !== "online";

  const finish = async (action: FinishAction, label: string) => {
    setBusy(label);
    setResult(null);
    try {
      const reply = await store.request({ type: "intent", intent: { kind: "finish", sessionID, action } });
      const handoff = resultOf(reply, "handoff");
      const continued = resultOf(reply, "session");
      const integrated = resultOf(reply, "integrated");
      if (action.action === "handoff" && handoff) setCommand(handoff.command);
      else if (action.action === "continue" && continued) go({ sessionID: continued.sessionID });
      else setResult({ ok: true, text: `${label}: done${integrated ? ` (${integrated.newTip.slice(0, 8)})` : ""}.` });
      refresh();
    } catch (e) {
      setResult({ ok: false, text: `${label} refused: ${errorText(e)}` });
    } finally {
      setBusy(null);
    }
  };
  const dis = busy !== null || offline;
  const integrate = (action: "merge" | "squash" | "rebase", label: string) =>
    finish({ action, message: message.trim() || null, updateCheckout, forceReason: forceReason.trim() || null }, label);
  /** Runs the project's checks, or records the report; the results arrive as events. */
  const devLoop = async (kind: "runChecks" | "report", label: string) => {
    setBusy(label);
    setResult(null);
    try {
      const reply = await store.request({ type: "intent", intent: { kind, sessionID } });
      const checks = resultOf(reply, "checksRun")?.checks ?? null;
      const text = checks ? `${checks.filter((c) => c.outcome === "passed").length}/${checks.length} checks passed (see the transcript).` : "Report recorded in the transcript.";
      setResult({ ok: !checks || checks.every((c) => c.outcome === "passed"), text: `${label}: ${text}` });
    } catch (e) {
      setResult({ ok: false, text: `${label} refused: ${errorText(e)}` });
    } finally {
      setBusy(null);
    }
  };

  return (
    <div class="git-actions" data-testid="git-actions">
      {facts && (
        <p class="diff-head">
          {facts.files.length} files changed · {facts.ahead} commits ahead of <strong>{facts.baseBranch}</strong>, {facts.behind} behind
          {facts.conflicts.length > 0 && <span class="badge status-error">would conflict: {facts.conflicts.join(", ")}</span>}
        </p>
      )}
      <fieldset>
        <legend>Checks and the report</legend>
        <div class="actions">
          <button disabled={dis} onClick={() => devLoop("runChecks", "Checks")} data-testid="run-checks">
            Run checks
          </button>
          <button disabled={dis} onClick={() => devLoop("report", "Report")} data-testid="report-now">
            Report
          </button>
        </div>
      </fieldset>
      <fieldset>
        <legend>Bring the work into {facts?.baseBranch ?? summary?.worktree?.baseRef ?? "the base branch"}</legend>
        <label>
          Commit message
          <input value={message} onInput={(e) => setMessage(e.currentTarget.value)} data-testid="commit-message" />
        </label>
        <label class="check">
          <input type="checkbox" checked={updateCheckout} onChange={(e) => setUpdateCheckout(e.currentTarget.checked)} data-testid="update-checkout" />
          Also fast-forward my checkout of the base branch (only if it is clean)
        </label>
        <label>
          Merge past failing checks, because (recorded)
          <input value={forceReason} placeholder="leave empty to respect the checks" onInput={(e) => setForceReason(e.currentTarget.value)} data-testid="force-reason" />
        </label>
        <div class="actions">
          <button class="primary" disabled={dis} onClick={() => integrate("merge", "Merge")} data-testid="merge">
            Merge
          </button>
          <button disabled={dis} onClick={() => integrate("squash", "Squash")} data-testid="squash">
            Squash
          </button>
          <button disabled={dis} onClick={() => integrate("rebase", "Rebase")} data-testid="rebase">
            Rebase
          </button>
        </div>
      </fieldset>
      <PullRequestForm store={store} sessionID={sessionID} baseBranch={facts?.baseBranch ?? summary?.worktree?.baseRef ?? null} onDone={refresh} />
      <fieldset>
        <legend>Or</legend>
        <div class="actions">
          <button disabled={dis} onClick={() => finish({ action: "keep" }, "Keep")} data-testid="keep">
            Keep
          </button>
          <button class="danger" disabled={dis} onClick={() => confirm("Discard this worktree and its branch? The agent's changes are lost.") && finish({ action: "discard" }, "Discard")} data-testid="discard">
            Discard
          </button>
          <button class="danger ghost" disabled={dis} onClick={() => confirm("Roll back: delete this kept worktree and branch?") && finish({ action: "rollback", confirm: true }, "Rollback")} data-testid="rollback">
            Rollback
          </button>
          <button disabled={dis} onClick={() => finish({ action: "handoff" }, "Handoff")} data-testid="handoff">
            Handoff
          </button>
        </div>
        {command && (
          <div class="handoff">
            <code data-testid="handoff-command">{command}</code>
            <button class="small" onClick={() => navigator.clipboard?.writeText(command)}>
              Copy
            </button>
          </div>
        )}
      </fieldset>
      <fieldset>
        <legend>Continue in a new session from these changes</legend>
        <textarea rows={2} value={prompt} placeholder="Next prompt" onInput={(e) => setPrompt(e.currentTarget.value)} />
        <label>
          In
          <select value={continueIn} onChange={(e) => setContinueIn(e.currentTarget.value as Backend | "")} data-testid="continue-in">
            <option value="">the same agent (its conversation forked)</option>
            {store.backends
              .filter((b) => b.backend !== summary?.backend)
              .map((b) => (
                <option value={b.backend} key={b.backend} disabled={!b.available}>
                  {b.backend}, told what happened so far{b.available ? "" : " (not installed)"}
                </option>
              ))}
          </select>
        </label>
        <button
          disabled={dis || !prompt.trim()}
          onClick={() => finish({ action: "continue", prompt, backend: continueIn || null }, "Continue")}
          data-testid="continue"
        >
          Continue
        </button>
      </fieldset>
      {busy && <p class="empty">{busy}…</p>}
      {result && (
        <p class={result.ok ? "ok" : "error"} role="status" data-testid="finish-result">
          {result.text}
        </p>
      )}
    </div>
  );
}
