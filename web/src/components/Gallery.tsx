/** The images of the session's worktree (screenshots, plots the agent made), as a grid. */
import { useEffect, useState } from "preact/hooks";

import type { FileEntry } from "../protocol.gen";
import { type CockpitStore, errorText } from "../store";

const IMAGE = /\.(png|jpe?g|gif|webp|svg|avif|bmp)$/i;

function Thumb({ store, sessionID, entry }: { store: CockpitStore; sessionID: string; entry: FileEntry }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let stale = false;
    store
      .request({ type: "readFile", sessionID, path: entry.path })
      .then((r) => {
        if (stale || r.type !== "fileContent") return;
        const f = r.file;
        if (f.truncated) setError("too large to preview");
        else setSrc(f.encoding === "base64" ? `data:${f.mime};base64,${f.content}` : `data:${f.mime};charset=utf-8,${encodeURIComponent(f.content)}`);
      })
      .catch((e) => !stale && setError(errorText(e)));
    return () => {
      stale = true;
    };
  }, [entry.path, entry.size]);
  return (
    <figure class="thumb" data-testid="gallery-image" data-path={entry.path}>
      {src ? <a href={src} target="_blank" rel="noopener"><img src={src} alt={entry.path} loading="lazy" /></a> : <div class="placeholder">{error ?? "…"}</div>}
      <figcaption>{entry.path}</figcaption>
    </figure>
  );
}

export function Gallery({ store, sessionID }: { store: CockpitStore; sessionID: string }) {
  const [images, setImages] = useState<FileEntry[] | null>(null);
  const [truncated, setTruncated] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (store.link !== "online") return;
    store
      .request({ type: "listFiles", sessionID, path: "", recursive: true })
      .then((r) => {
        if (r.type !== "files") return;
        setImages(r.entries.filter((e) => e.kind === "file" && IMAGE.test(e.path)));
        setTruncated(r.truncated);
      })
      .catch((e) => setError(errorText(e)));
  }, [sessionID, store.link]);
  return (
    <div class="gallery" data-testid="gallery">
      {error && <p class="error">{error}</p>}
      {images && images.length === 0 && <p class="empty">No images in this worktree.</p>}
      {truncated && <p class="muted">Large worktree: only the first files were searched.</p>}
      <div class="grid">
        {images?.map((e) => (
          <Thumb key={e.path} store={store} sessionID={sessionID} entry={e} />
        ))}
      </div>
    </div>
  );
}
