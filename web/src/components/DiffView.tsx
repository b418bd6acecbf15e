/** The live diff of a session's worktree vs its base: file list + syntax-colored unified diff
 *  (diff2html), refreshed while the agent works. */
import { Diff2HtmlUI } from "diff2html/lib-esm/ui/js/diff2html-ui-base";
import "diff2html/bundles/css/diff2html.min.css";
import { useEffect, useRef, useState } from "preact/hooks";

import { hljs } from "../markdown";
import type { GitFacts } from "../protocol.gen";
import { type CockpitStore, errorText, useTranscript } from "../store";

/** Fetches git facts (with the patch) now, after new events (debounced) and every few seconds. */
export function useGitFacts(store: CockpitStore, sessionID: string, withPatch: boolean) {
  const transcript = useTranscript(store, sessionID);
  const [facts, setFacts] = useState<GitFacts | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const online = store.link === "online";
  useEffect(() => {
    if (!online) return;
    let stale = false;
    const t = setTimeout(async () => {
      try {
        const reply = await store.request({ type: "gitFacts", sessionID, includePatch: withPatch });
        if (!stale && reply.type === "gitFacts") {
          setFacts(reply.facts);
          setError(null);
        }
      } catch (e) {
        if (!stale) setError(errorText(e));
      }
    }, facts ? 400 : 0);
    return () => {
      stale = true;
      clearTimeout(t);
    };
  }, [sessionID, transcript.version, tick, online]);
  useEffect(() => {
    const i = setInterval(() => setTick((n) => n + 1), 5000);
    return () => clearInterval(i);
  }, []);
  return { facts, error, refresh: () => setTick((n) => n + 1) };
}

export function DiffView({ store, sessionID }: { store: CockpitStore; sessionID: string }) {
  const { facts, error } = useGitFacts(store, sessionID, true);
  const target = useRef<HTMLDivElement>(null);
  const patch = facts?.patch ?? "";
  useEffect(() => {
    if (!target.current) return;
    if (!patch) {
      target.current.innerHTML = "";
      return;
    }
    const ui = new Diff2HtmlUI(target.current, patch, {
      drawFileList: false,
      matching: "lines",
      outputFormat: "line-by-line",
      highlight: true,
      fileContentToggle: false,
      stickyFileHeaders: false,
      synchronisedScroll: false,
    }, hljs);
    ui.draw();
    ui.highlightCode();
  }, [patch]);

  return (
    <div class="diff-view" data-testid="diff-view">
      {error && <p class="error">{error}</p>}
      {!facts && !error && <p class="empty">Loading diff…</p>}
      {facts && (
        <>
          <p class="diff-head">
            vs <strong>{facts.baseBranch}</strong> <code>{facts.baseSHA.slice(0, 8)}</code> · {facts.ahead} ahead, {facts.behind} behind
            {facts.conflicts.length > 0 && <span class="badge status-error">conflicts: {facts.conflicts.join(", ")}</span>}
          </p>
          {facts.files.length === 0 && <p class="empty">No changes yet.</p>}
          <ul class="file-list" data-testid="diff-files">
            {facts.files.map((f) => (
              <li key={f.path} data-path={f.path}>
                <span class={`st st-${f.status}`}>{f.status}</span> <span class="path">{f.oldPath ? `${f.oldPath} → ${f.path}` : f.path}</span>{" "}
                {f.binary ? <span class="bin">binary</span> : <span class="counts"><span class="add">+{f.additions}</span> <span class="del">−{f.deletions}</span></span>}
              </li>
            ))}
          </ul>
        </>
      )}
      <div ref={target} class="d2h" />
    </div>
  );
}
