/** The live diff of a session's worktree vs its base, or of one turn: file list +
 *  syntax-colored unified diff (diff2html), refreshed while the agent works; lines can be
 *  selected for review comments, which stay shown on the diff. */
import { parse } from "diff2html/lib-esm/diff-parser";
import { Diff2HtmlUI } from "diff2html/lib-esm/ui/js/diff2html-ui-base";
import "diff2html/bundles/css/diff2html.min.css";
import { useEffect, useRef, useState } from "preact/hooks";

import { hljs } from "../markdown";
import type { GitFacts, ReviewComment } from "../protocol.gen";
import { type CockpitStore, errorText, useTranscript } from "../store";
import { type LineSelection, ReviewPanel, citation, useReviewComments } from "./ReviewPanel";

/** Fetches git facts (with the patch) now, after new events (debounced) and every few seconds;
 *  with `turn`, what that turn changed. */
export function useGitFacts(store: CockpitStore, sessionID: string, withPatch: boolean, turn: number | null = null) {
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
        const reply = await store.request({ type: "gitFacts", sessionID, includePatch: withPatch, turn });
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
  }, [sessionID, transcript.version, tick, online, turn]);
  useEffect(() => {
    const i = setInterval(() => setTick((n) => n + 1), 5000);
    return () => clearInterval(i);
  }, []);
  return { facts, error, refresh: () => setTick((n) => n + 1) };
}

export function DiffView({ store, sessionID }: { store: CockpitStore; sessionID: string }) {
  const [turn, setTurn] = useState<number | null>(null);
  const { facts, error } = useGitFacts(store, sessionID, true, turn);
  const { comments, reload } = useReviewComments(store, sessionID);
  const [selection, setSelection] = useState<LineSelection | null>(null);
  const target = useRef<HTMLDivElement>(null);
  const shown = facts && (facts.turn ?? null) === turn ? facts : null;
  const patch = shown?.patch ?? "";
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
    markLines(target.current, patch);
  }, [patch]);
  // The selection and the comments on the drawn diff (again after every redraw).
  useEffect(() => {
    if (target.current) annotate(target.current, selection, comments);
  }, [patch, selection, comments]);
  /** A click on a line selects it; a shift-click extends the selection within the file. */
  const pick = (e: MouseEvent) => {
    const row = (e.target as HTMLElement).closest<HTMLElement>("tr[data-line]");
    const path = row?.closest<HTMLElement>("[data-path]")?.dataset.path;
    if (!row || !path) return;
    const line = Number(row.dataset.line);
    if (e.shiftKey && selection && selection.path === path) {
      setSelection({ path, line: Math.min(selection.line, line), endLine: Math.max(selection.endLine, line) });
    } else {
      setSelection({ path, line, endLine: line });
    }
  };

  return (
    <div class="diff-view" data-testid="diff-view">
      {error && <p class="error">{error}</p>}
      {!facts && !error && <p class="empty">Loading diff…</p>}
      {facts && (
        <>
          <p class="diff-head">
            {(facts.turns ?? []).length > 0 && (
              <select
                value={turn === null ? "" : String(turn)}
                onChange={(e) => {
                  const v = (e.target as HTMLSelectElement).value;
                  setTurn(v === "" ? null : Number(v));
                  setSelection(null);
                }}
                aria-label="Which change"
                data-testid="diff-turn"
              >
                <option value="">Whole session</option>
                {(facts.turns ?? []).map((t) => (
                  <option key={t.turn} value={String(t.turn)}>
                    Turn {t.turn}
                    {t.endedAt == null ? " (running)" : ""}
                  </option>
                ))}
              </select>
            )}{" "}
            vs <strong>{facts.baseBranch}</strong> <code>{facts.baseSHA.slice(0, 8)}</code> · {facts.ahead} ahead, {facts.behind} behind
            {facts.conflicts.length > 0 && <span class="badge status-error">conflicts: {facts.conflicts.join(", ")}</span>}
          </p>
          {shown && shown.files.length === 0 && <p class="empty">{turn === null ? "No changes yet." : `Turn ${turn} changed nothing.`}</p>}
          <ul class="file-list" data-testid="diff-files">
            {(shown?.files ?? []).map((f) => (
              <li key={f.path} data-path={f.path}>
                <span class={`st st-${f.status}`}>{f.status}</span> <span class="path">{f.oldPath ? `${f.oldPath} → ${f.path}` : f.path}</span>{" "}
                {f.binary ? <span class="bin">binary</span> : <span class="counts"><span class="add">+{f.additions}</span> <span class="del">−{f.deletions}</span></span>}
              </li>
            ))}
          </ul>
          <ReviewPanel
            store={store}
            sessionID={sessionID}
            selection={selection}
            snapshot={shown?.snapshot ?? null}
            comments={comments}
            onChanged={reload}
            onClearSelection={() => setSelection(null)}
          />
        </>
      )}
      <div ref={target} class="d2h" onClick={pick} />
    </div>
  );
}

/** Tags each drawn file with its new path and each row with its new-side line number. */
function markLines(root: HTMLElement, patch: string) {
  const files = parse(patch);
  root.querySelectorAll<HTMLElement>(".d2h-file-wrapper").forEach((wrapper, i) => {
    const name = files[i]?.newName;
    if (!name || name === "/dev/null") return;
    wrapper.dataset.path = name;
    wrapper.querySelectorAll<HTMLElement>("tr").forEach((row) => {
      const n = row.querySelector(".line-num2")?.textContent?.trim();
      if (n && /^\d+$/.test(n)) {
        row.dataset.line = n;
        row.classList.add("commentable");
      }
    });
  });
}

/** Highlights the selected rows and shows each comment under the last line it covers. */
function annotate(root: HTMLElement, selection: LineSelection | null, comments: ReviewComment[]) {
  root.querySelectorAll(".review-inline").forEach((el) => el.remove());
  root.querySelectorAll<HTMLElement>("tr[data-line]").forEach((row) => {
    const path = row.closest<HTMLElement>("[data-path]")?.dataset.path;
    const n = Number(row.dataset.line);
    row.classList.toggle("selected", !!selection && selection.path === path && n >= selection.line && n <= selection.endLine);
  });
  for (const c of comments) {
    const wrapper = [...root.querySelectorAll<HTMLElement>("[data-path]")].find((w) => w.dataset.path === c.path);
    const row = wrapper?.querySelector<HTMLElement>(`tr[data-line="${c.endLine ?? c.line}"]`);
    if (!row) continue;
    const extra = document.createElement("tr");
    extra.className = `review-inline ${c.status}${c.outdated ? " outdated" : ""}`;
    extra.dataset.testid = "review-inline";
    const cell = document.createElement("td");
    cell.colSpan = 2;
    const state = c.status === "resolved" ? "resolved" : c.outdated ? "outdated" : c.sentAt != null ? "sent" : "open";
    cell.textContent = `↳ ${citation(c)} (${state}): ${c.body}`;
    extra.appendChild(cell);
    row.after(extra);
  }
}
