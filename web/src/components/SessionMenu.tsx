/** The session's "More" menu: rename, archive, export (the seed's markdown or JSONL), and its
 * worktree's disk use (measure, reclaim). */
import { useState } from "preact/hooks";

import { humanBytes } from "../bytes";
import { download } from "../download";
import type { DiskUsage, ExportFormat } from "../protocol.gen";
import { resultOf } from "../results";
import { type CockpitStore, errorText } from "../store";

export function SessionMenu({ store, sessionID, onError }: { store: CockpitStore; sessionID: string; onError: (e: string | null) => void }) {
  const [open, setOpen] = useState(false);
  const summary = store.sessions.get(sessionID);
  const offline = store.link !== "online";
  const run = async (f: () => Promise<unknown>) => {
    setOpen(false);
    onError(null);
    try {
      await f();
    } catch (e) {
      onError(errorText(e));
    }
  };
  const exportAs = (format: ExportFormat) =>
    run(async () => {
      const reply = await store.request({ type: "exportSession", sessionID, format });
      const text = resultOf(reply, "exported")?.text;
      if (typeof text !== "string") throw new Error("The host sent no export text.");
      const base = (summary?.title || sessionID).replace(/[^\w.-]+/g, "-").slice(0, 60);
      download(`${base}.${format === "markdown" ? "md" : "jsonl"}`, text, format === "markdown" ? "text/markdown" : "application/x-ndjson");
    });
  const canReclaim = !!summary?.worktree && !summary.worktreeReclaimed && !summary.readOnly && summary.status !== "running" && summary.status !== "awaiting-approval";
  return (
    <div class="menu">
      <button class="small ghost" aria-haspopup="menu" aria-expanded={open} onClick={() => setOpen(!open)} data-testid="session-menu">
        ⋯
      </button>
      {open && (
        <div class="menu-items" role="menu">
          <button
            role="menuitem"
            onClick={() => {
              const title = prompt("Rename session", summary?.title ?? "");
              // Offline, the rename is queued: latest wins when it is sent.
              if (title && title.trim())
                void run(() =>
                  offline
                    ? store.pending.addRename(sessionID, title.trim(), store.connection.cursor(sessionID))
                    : store.request({ type: "intent", intent: { kind: "rename", sessionID, title: title.trim() } }),
                );
              else setOpen(false);
            }}
            data-testid="rename"
          >
            Rename…
          </button>
          <button
            role="menuitem"
            disabled={offline}
            onClick={() => run(() => store.request({ type: "intent", intent: { kind: "archive", sessionID, archived: !summary?.archived } }))}
            data-testid="archive"
          >
            {summary?.archived ? "Unarchive" : "Archive"}
          </button>
          <button role="menuitem" disabled={offline} onClick={() => exportAs("markdown")} data-testid="export-markdown">
            Export as Markdown
          </button>
          <button role="menuitem" disabled={offline} onClick={() => exportAs("jsonl")}>
            Export as JSONL
          </button>
          {summary?.worktree && (
            <p class="menu-note" data-testid="disk-use">
              {diskText(summary.disk, !!summary.worktreeReclaimed)}
            </p>
          )}
          {summary?.worktree && !summary.worktreeReclaimed && (
            <button role="menuitem" disabled={offline} onClick={() => run(() => store.request({ type: "intent", intent: { kind: "measureDisk", sessionID } }))} data-testid="measure-disk">
              Measure disk use
            </button>
          )}
          {canReclaim && (
            <button
              role="menuitem"
              disabled={offline}
              onClick={() => {
                if (confirm("Remove this worktree's directory to free disk? The branch and any uncommitted work are kept; a follow-up brings it back (build output is not kept).")) {
                  void run(() => store.request({ type: "intent", intent: { kind: "reclaim", sessionID } }));
                } else setOpen(false);
              }}
              data-testid="reclaim"
            >
              Reclaim worktree…
            </button>
          )}
        </div>
      )}
    </div>
  );
}

/** `1.2 GB on disk (900.0 MB build output)`, or why there is no figure. */
export function diskText(disk: DiskUsage | null | undefined, reclaimed: boolean): string {
  if (reclaimed) return "Worktree reclaimed: a follow-up brings it back.";
  if (!disk) return "Disk use not measured yet.";
  return `${humanBytes(disk.bytes)} on disk (${humanBytes(disk.buildBytes)} build output)`;
}
