/** A read-only explorer of the session's worktree: directories, then a file's content. */
import { useEffect, useState } from "preact/hooks";

import { highlightFile } from "../markdown";
import type { FileContent, FileEntry } from "../protocol.gen";
import { type CockpitStore, errorText } from "../store";
import { LongText } from "./Rows";

export function FileExplorer({ store, sessionID }: { store: CockpitStore; sessionID: string }) {
  const [dir, setDir] = useState("");
  const [entries, setEntries] = useState<FileEntry[] | null>(null);
  const [file, setFile] = useState<FileContent | null>(null);
  const [error, setError] = useState<string | null>(null);
  const online = store.link === "online";

  useEffect(() => {
    if (!online) return;
    let stale = false;
    store
      .request({ type: "listFiles", sessionID, path: dir, recursive: false })
      .then((r) => {
        if (!stale && r.type === "files") {
          setEntries([...r.entries].sort((a, b) => (a.kind === "dir" ? 0 : 1) - (b.kind === "dir" ? 0 : 1) || a.path.localeCompare(b.path)));
          setError(null);
        }
      })
      .catch((e) => !stale && setError(errorText(e)));
    return () => {
      stale = true;
    };
  }, [sessionID, dir, online]);

  const open = async (path: string) => {
    try {
      const r = await store.request({ type: "readFile", sessionID, path });
      if (r.type === "fileContent") setFile(r.file);
    } catch (e) {
      setError(errorText(e));
    }
  };

  const crumbs = dir ? dir.split("/") : [];
  if (file) {
    const html = file.encoding === "utf8" ? highlightFile(file.path, file.content) : null;
    return (
      <div class="file-view" data-testid="file-view">
        <p class="crumbs">
          <button class="ghost small" onClick={() => setFile(null)}>
            ← {dir || "/"}
          </button>{" "}
          <strong>{file.path}</strong> <span class="muted">{file.size} bytes{file.truncated ? " (truncated)" : ""}</span>
        </p>
        {file.mime.startsWith("image/") ? (
          <img class="preview-image" src={`data:${file.mime};base64,${file.content}`} alt={file.path} />
        ) : file.encoding === "base64" ? (
          <p class="empty">Binary file ({file.mime}).</p>
        ) : html ? (
          <pre class="code hljs">
            <code dangerouslySetInnerHTML={{ __html: html }} />
          </pre>
        ) : (
          <LongText text={file.content} label={file.path.split("/").pop() ?? "file"} />
        )}
      </div>
    );
  }
  return (
    <div class="explorer" data-testid="file-explorer">
      <p class="crumbs">
        <button class="ghost small" onClick={() => setDir("")}>
          /
        </button>
        {crumbs.map((c, i) => (
          <button key={i} class="ghost small" onClick={() => setDir(crumbs.slice(0, i + 1).join("/"))}>
            {c}/
          </button>
        ))}
      </p>
      {error && <p class="error">{error}</p>}
      {!entries && !error && <p class="empty">Loading…</p>}
      <ul class="entries">
        {entries?.map((e) => (
          <li key={e.path}>
            <button class="entry" onClick={() => (e.kind === "dir" ? setDir(e.path) : open(e.path))} data-testid="file-entry" data-path={e.path}>
              <span class="icon">{e.kind === "dir" ? "📁" : e.kind === "symlink" ? "↪" : "📄"}</span> {e.path.split("/").pop()}
              {e.kind === "file" && <span class="muted"> {e.size} B</span>}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
