/** The session transcript: a virtualized list of rows that sticks to the bottom while live. */
import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";

import type { Transcript } from "../transcript";
import { RowView } from "./Rows";

export function TranscriptView({ transcript, showNative }: { transcript: Transcript; showNative: boolean }) {
  const scroller = useRef<HTMLDivElement>(null);
  // Native lines with no normalized meaning are kept (and countable) but hidden unless asked.
  const rows = useMemo(
    () => (showNative ? transcript.rows : transcript.rows.filter((r) => r.kind !== "raw")),
    [transcript, transcript.version, transcript.rows.length, showNative],
  );
  const [atBottom, setAtBottom] = useState(true);
  const virtual = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => 56,
    overscan: 8,
    getItemKey: (i) => rows[i]?.seq ?? i,
  });

  // Follow the stream while the reader is at the bottom.
  useLayoutEffect(() => {
    if (atBottom && rows.length > 0) virtual.scrollToIndex(rows.length - 1, { align: "end" });
  }, [transcript.version, rows.length, atBottom]);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const on = () => setAtBottom(el.scrollHeight - el.scrollTop - el.clientHeight < 80);
    el.addEventListener("scroll", on, { passive: true });
    return () => el.removeEventListener("scroll", on);
  }, []);

  const items = virtual.getVirtualItems();
  return (
    <div class="transcript" ref={scroller} data-testid="transcript" data-rows={rows.length} data-last-seq={transcript.facts.lastSeq}>
      {rows.length === 0 && <p class="empty">Waiting for events…</p>}
      <div style={{ height: `${virtual.getTotalSize()}px`, position: "relative", width: "100%" }}>
        <div style={{ position: "absolute", top: 0, left: 0, width: "100%", transform: `translateY(${items[0]?.start ?? 0}px)` }}>
          {items.map((item) => {
            const row = rows[item.index];
            if (!row) return null;
            return (
              <div key={item.key} data-index={item.index} ref={virtual.measureElement} class="row-wrap">
                <RowView row={row} rev={row.rev} cwd={transcript.facts.cwd} />
              </div>
            );
          })}
        </div>
      </div>
      {!atBottom && (
        <button class="jump" onClick={() => setAtBottom(true)} data-testid="jump-to-latest">
          ↓ Latest
        </button>
      )}
    </div>
  );
}
