/** Review comments on the diff: write one on the selected line(s), see them all (open, sent,
 *  resolved, outdated), resolve them, and send the open ones to the agent as one follow-up. */
import { useEffect, useState } from "preact/hooks";

import type { HostMessage, ReviewComment } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText, useTranscript } from "../store";

/** Lines picked in the diff: a file and a line range of its new side. */
export interface LineSelection {
  path: string;
  line: number;
  endLine: number;
}

export function citation(c: { path: string; line: number; endLine?: number | null }): string {
  return c.endLine && c.endLine !== c.line ? `${c.path}:${c.line}-${c.endLine}` : `${c.path}:${c.line}`;
}

/** The session's review comments, fetched now, after new events (debounced), every few seconds
 *  and on `reload`. */
export function useReviewComments(store: CockpitStore, sessionID: string) {
  const transcript = useTranscript(store, sessionID);
  const [comments, setComments] = useState<ReviewComment[]>([]);
  const [tick, setTick] = useState(0);
  const online = store.link === "online";
  useEffect(() => {
    if (!online) return;
    let stale = false;
    const t = setTimeout(async () => {
      try {
        const reply = await store.request({ type: "intent", intent: { kind: "reviewComments", sessionID } });
        const r = resultOf(reply, "reviewComments");
        if (!stale && r) setComments(r.comments);
      } catch {
        /* the diff view shows the session's errors */
      }
    }, 300);
    return () => {
      stale = true;
      clearTimeout(t);
    };
  }, [sessionID, transcript.version, tick, online]);
  // Another device may add, resolve or send comments: look again every few seconds.
  useEffect(() => {
    const i = setInterval(() => setTick((n) => n + 1), 5000);
    return () => clearInterval(i);
  }, []);
  return { comments, reload: () => setTick((n) => n + 1) };
}

export function ReviewPanel({
  store,
  sessionID,
  selection,
  snapshot,
  comments,
  onChanged,
  onClearSelection,
}: {
  store: CockpitStore;
  sessionID: string;
  selection: LineSelection | null;
  snapshot: string | null;
  comments: ReviewComment[];
  onChanged: () => void;
  onClearSelection: () => void;
}) {
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const offline = store.link !== "online";
  const unsent = comments.filter((c) => c.status === "open" && c.sentAt == null);

  const act = async (label: string, intent: Parameters<CockpitStore["request"]>[0] & { type: "intent" }, done?: (reply: HostMessage) => string) => {
    setBusy(true);
    setResult(null);
    try {
      const reply = await store.request(intent);
      if (done) setResult({ ok: true, text: done(reply) });
      onChanged();
      return true;
    } catch (e) {
      setResult({ ok: false, text: `${label}: ${errorText(e)}` });
      return false;
    } finally {
      setBusy(false);
    }
  };
  const add = async () => {
    if (!selection || !text.trim()) return;
    const { path, line, endLine } = selection;
    const ok = await act("Comment refused", {
      type: "intent",
      intent: { kind: "addReviewComment", sessionID, path, line, endLine: endLine !== line ? endLine : null, body: text, snapshot },
    });
    if (ok) {
      setText("");
      onClearSelection();
    }
  };
  const send = () =>
    act("Send refused", { type: "intent", intent: { kind: "sendReview", sessionID } }, (reply) => `Sent ${resultOf(reply, "reviewSendout")?.sent ?? 0} comment(s) to the agent.`);
  const resolve = (c: ReviewComment, resolved: boolean) =>
    act("Resolve refused", { type: "intent", intent: { kind: "resolveReviewComment", sessionID, commentID: c.commentID, resolved } });

  return (
    <section class="review" data-testid="review">
      {selection ? (
        <div class="review-form" data-testid="review-form">
          <label>
            Comment on <code data-testid="review-selection">{citation(selection)}</code>
            <textarea value={text} rows={3} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} data-testid="review-comment-text" />
          </label>
          <div class="actions">
            <button disabled={busy || offline || !text.trim()} onClick={add} data-testid="add-review-comment">
              Add comment
            </button>
            <button class="ghost" onClick={onClearSelection}>
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <p class="hint">Click a line of the diff to comment on it (shift-click for a range).</p>
      )}
      {comments.length > 0 && (
        <ul class="review-comments">
          {comments.map((c) => (
            <li key={c.commentID} class={`review-comment ${c.status}`} data-testid="review-comment" data-status={c.status} data-outdated={c.outdated ? "true" : "false"}>
              <div class="review-comment-head">
                <code>{citation(c)}</code>
                <span class="badge">{c.status === "resolved" ? "resolved" : c.sentAt != null ? "sent" : "open"}</span>
                {c.outdated && <span class="badge">outdated</span>}
                <button class="ghost small" disabled={busy || offline} onClick={() => resolve(c, c.status !== "resolved")} data-testid="resolve-comment">
                  {c.status === "resolved" ? "Reopen" : "Resolve"}
                </button>
              </div>
              {c.quote.length > 0 && <pre class="review-quote">{c.quote.join("\n")}</pre>}
              <p class="review-body">{c.body}</p>
            </li>
          ))}
        </ul>
      )}
      {(unsent.length > 0 || result) && (
        <div class="actions">
          {unsent.length > 0 && (
            <button disabled={busy || offline} onClick={send} data-testid="send-review">
              Send review ({unsent.length})
            </button>
          )}
          {result && (
            <span class={result.ok ? "ok" : "error"} data-testid="review-result">
              {result.text}
            </span>
          )}
        </div>
      )}
    </section>
  );
}
