/** The tool pane: live diff vs base, git actions, a read-only file explorer and an image
 *  gallery of the session's worktree. */
import { useState } from "preact/hooks";

import type { CockpitStore } from "../store";
import { DiffView } from "./DiffView";
import { FileExplorer } from "./FileExplorer";
import { Gallery } from "./Gallery";
import { GitActions } from "./GitActions";

type Tab = "diff" | "git" | "files" | "images";

export function ToolPane({ store, sessionID, onClose }: { store: CockpitStore; sessionID: string; onClose: () => void }) {
  const [tab, setTab] = useState<Tab>("diff");
  const summary = store.sessions.get(sessionID);
  return (
    <aside class="pane tool-pane" data-testid="tool-pane" aria-label="Tools">
      <header class="pane-head">
        <button class="ghost small" onClick={onClose} aria-label="Close tools" data-testid="close-tools">
          ⟩
        </button>
        <div class="tabs" role="tablist">
          {(["diff", "git", "files", "images"] as Tab[]).map((t) => (
            <button key={t} role="tab" aria-selected={tab === t} class={tab === t ? "active" : ""} onClick={() => setTab(t)} data-testid={`tab-${t}`}>
              {t === "diff" ? "Diff" : t === "git" ? "Finish" : t === "files" ? "Files" : "Images"}
            </button>
          ))}
        </div>
      </header>
      <div class="scroll">
        {!summary?.worktree && <p class="empty">This session has no worktree.</p>}
        {summary?.worktree && tab === "diff" && <DiffView store={store} sessionID={sessionID} />}
        {summary?.worktree && tab === "git" && <GitActions store={store} sessionID={sessionID} />}
        {summary?.worktree && tab === "files" && <FileExplorer store={store} sessionID={sessionID} />}
        {summary?.worktree && tab === "images" && <Gallery store={store} sessionID={sessionID} />}
      </div>
    </aside>
  );
}
