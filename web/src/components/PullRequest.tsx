/** Finishing by pull request: push the session branch and open a PR with `gh` on the host
 *  (docs/dev-loop.md), and the link to the PR a session was finished with. */
import { useState } from "preact/hooks";

import type { PullRequestOpened } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText } from "../store";

/** The session's PR in its header: number, state, a link. */
export function PullRequestLink({ pr }: { pr: PullRequestOpened }) {
  return (
    <a class="badge pr-link" href={pr.url} target="_blank" rel="noopener noreferrer" title={`${pr.head} → ${pr.base} in ${pr.repo}`} data-testid="pr-link">
      PR #{pr.number} · {pr.state}
    </a>
  );
}

export function PullRequestForm({
  store,
  sessionID,
  baseBranch,
  onDone,
}: {
  store: CockpitStore;
  sessionID: string;
  baseBranch: string | null;
  onDone: () => void;
}) {
  const summary = store.sessions.get(sessionID);
  const [title, setTitle] = useState(summary?.title ?? "");
  const [base, setBase] = useState("");
  const [repo, setRepo] = useState("");
  const [draft, setDraft] = useState(false);
  const [forceReason, setForceReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string; url?: string } | null>(null);
  const offline = store.link !== "online";

  const open = async () => {
    setBusy(true);
    setResult(null);
    try {
      const reply = await store.request({
        type: "intent",
        intent: {
          kind: "finish",
          sessionID,
          action: {
            action: "pullRequest",
            title: title.trim() || null,
            draft,
            base: base.trim() || null,
            repo: repo.trim() || null,
            forceReason: forceReason.trim() || null,
          },
        },
      });
      const pr = resultOf(reply, "pullRequest");
      setResult(pr ? { ok: true, text: `Pull request #${pr.number} (${pr.state}) opened:`, url: pr.url } : { ok: true, text: "Pull request opened." });
      onDone();
    } catch (e) {
      setResult({ ok: false, text: `Pull request refused: ${errorText(e)}` });
    } finally {
      setBusy(false);
    }
  };

  return (
    <fieldset data-testid="pull-request">
      <legend>Open a pull request into {base.trim() || baseBranch || "the base branch"}</legend>
      <label>
        Title
        <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} data-testid="pr-title" />
      </label>
      <label>
        Base branch
        <input value={base} placeholder={baseBranch ?? "the session's base"} onInput={(e) => setBase(e.currentTarget.value)} data-testid="pr-base" />
      </label>
      <label>
        Repository
        <input value={repo} placeholder="[HOST/]OWNER/REPO (default: the remote's)" onInput={(e) => setRepo(e.currentTarget.value)} data-testid="pr-repo" />
      </label>
      <label class="check">
        <input type="checkbox" checked={draft} onChange={(e) => setDraft(e.currentTarget.checked)} data-testid="pr-draft" />
        Draft
      </label>
      <label>
        Open past failing checks, because (recorded)
        <input value={forceReason} placeholder="leave empty to respect the checks" onInput={(e) => setForceReason(e.currentTarget.value)} data-testid="pr-force-reason" />
      </label>
      <div class="actions">
        <button class="primary" disabled={busy || offline} onClick={open} data-testid="open-pr">
          Push and open pull request
        </button>
      </div>
      {busy && <p class="empty">Pushing and opening the pull request…</p>}
      {result && (
        <p class={result.ok ? "ok" : "error"} role="status" data-testid="pr-result">
          {result.text}{" "}
          {result.url && (
            <a href={result.url} target="_blank" rel="noopener noreferrer">
              {result.url}
            </a>
          )}
        </p>
      )}
    </fieldset>
  );
}
