/** One transcript row per kind: markdown prose, collapsed thinking, collapsible tool calls
 *  with input and (truncated) result, approvals with who answered, errors, notices, raw. */
import type { ComponentChildren } from "preact";
import { memo } from "preact/compat";
import { useState } from "preact/hooks";

import { download } from "../download";
import { renderMarkdown } from "../markdown";
import type { CheckFinished } from "../protocol.gen";
import { displayText, egressAsked, type Row, toolSummary } from "../transcript";
import { ReportCard } from "./ReportCard";

/** Longest text shown before "Show all". */
export const PREVIEW_CHARS = 20_000;

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Long text, truncated with a way to see (or save) all of it. */
export function LongText({ text, label }: { text: string; label: string }) {
  const [all, setAll] = useState(false);
  const long = text.length > PREVIEW_CHARS;
  const save = () => download(`${label}.txt`, text);
  return (
    <div class="long-text">
      <pre>{long && !all ? text.slice(0, PREVIEW_CHARS) : text}</pre>
      {long && (
        <div class="truncated" data-testid="truncated">
          {all ? "" : `Showing ${size(PREVIEW_CHARS)} of ${size(text.length)}. `}
          <button class="small" onClick={() => setAll(!all)} data-testid="show-all">
            {all ? "Show less" : "Show all"}
          </button>{" "}
          <button class="small ghost" onClick={save}>
            Save
          </button>
        </div>
      )}
    </div>
  );
}

/** Which collapsible rows a person opened (by seq), so scrolling away and back keeps them open. */
const opened = new Set<number>();

function Collapsible({ row, class: cls, kind, summary, children, tool }: { row: Row; class: string; kind: string; summary: ComponentChildren; children: ComponentChildren; tool?: string }) {
  return (
    <details
      class={cls}
      data-kind={kind}
      data-seq={row.seq}
      data-tool={tool}
      open={opened.has(row.seq)}
      onToggle={(e) => {
        if ((e.currentTarget as HTMLDetailsElement).open) opened.add(row.seq);
        else opened.delete(row.seq);
      }}
    >
      <summary>{summary}</summary>
      {children}
    </details>
  );
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v, null, 2) ?? "";
  } catch {
    return String(v);
  }
}

function RowImpl({ row, cwd }: { row: Row; rev: number; cwd: string | null }) {
  switch (row.kind) {
    case "user":
      return (
        <div class="row user" data-kind="user" data-seq={row.seq}>
          <div class="who">You</div>
          <div class="bubble">{row.text}</div>
        </div>
      );
    case "assistant":
      return (
        <div class={`row assistant${row.streaming ? " streaming" : ""}`} data-kind="assistant" data-seq={row.seq}>
          <div class="markdown" dangerouslySetInnerHTML={{ __html: renderMarkdown(row.text) }} />
        </div>
      );
    case "thinking":
      return (
        <Collapsible row={row} class="row thinking" kind="thinking" summary={`Thinking${row.streaming ? "…" : ""}`}>
          <pre>{row.text}</pre>
        </Collapsible>
      );
    case "tool": {
      const state = row.result ? (row.result.isError ? "error" : "done") : row.complete ? "waiting" : "running";
      const input = row.input ?? (row.inputStream ? row.inputStream : null);
      const result = row.result ? displayText(row.result.content) : null;
      return (
        <Collapsible
          row={row}
          class={`row tool tool-${state}`}
          kind="tool"
          tool={row.name}
          summary={
            <>
              <span class="tool-name">{row.name}</span> <span class="tool-arg">{toolSummary(row.input, cwd)}</span>
              <span class={`tool-state ${state}`}>{state}</span>
            </>
          }
        >
          <div class="tool-body">
            <h4>Input</h4>
            <LongText text={typeof input === "string" ? input : json(input)} label={`${row.name}-input`} />
            {result !== null && (
              <>
                <h4>{row.result?.isError ? "Error" : "Result"}</h4>
                <LongText text={result} label={`${row.name}-result`} />
              </>
            )}
          </div>
        </Collapsible>
      );
    }
    case "approval": {
      const r = row.resolved;
      const asked = egressAsked(row.request);
      return (
        <div class={`row approval${r ? "" : " open"}`} data-kind="approval" data-seq={row.seq}>
          <span class="icon">{r ? (r.decision.startsWith("allow") || r.decision === "approvePlan" || r.decision === "answered" ? "✓" : "✗") : "?"}</span>
          <span>
            {asked ? `network access to ${asked.host}:${asked.port}` : `${row.request.toolName} ${toolSummary(row.request.input, cwd)}`} —{" "}
            {r ? (
              <span data-testid="approval-outcome">
                {r.decision} by <strong>{r.by}</strong>
                {r.mode ? ` (executing in ${r.mode} mode)` : ""}
                {r.message ? `: ${r.message}` : ""}
              </span>
            ) : (
              "waiting for a decision"
            )}
          </span>
        </div>
      );
    }
    case "error":
      return (
        <div class="row error" role="alert" data-kind="error" data-seq={row.seq}>
          <strong>{row.code}</strong> {row.message}
        </div>
      );
    case "notice":
      return (
        <div class={`row notice ${row.tone}`} data-kind="notice" data-seq={row.seq}>
          {row.text}
          {row.detail && <div class="detail">{row.detail}</div>}
        </div>
      );
    case "stderr":
      return (
        <Collapsible row={row} class="row stderr" kind="stderr" summary={`stderr (${row.lines.length} lines)`}>
          <LongText text={row.lines.join("\n")} label="stderr" />
        </Collapsible>
      );
    case "check": {
      const f = row.finished;
      const state = f ? f.outcome : "running";
      return (
        <Collapsible row={row} class={`row check check-${state}`} kind="check" summary={<span data-testid="check-summary">{checkLine(row.name, f)}</span>}>
          {row.argv.length > 0 && <div class="check-argv">{row.argv.join(" ")}</div>}
          <LongText text={row.output} label={`check-${row.name}`} />
          {f?.logPath && <div class="detail">Full log on the host: {f.logPath}</div>}
        </Collapsible>
      );
    }
    case "report":
      return <ReportCard report={row.report} seq={row.seq} />;
    case "raw":
      return (
        <Collapsible row={row} class="row raw" kind="raw" summary={`Native line${row.nativeType ? `: ${row.nativeType}` : ""}`}>
          <LongText text={json(row.native)} label="raw" />
        </Collapsible>
      );
    case "unknown":
      return (
        <Collapsible row={row} class="row unknown" kind="unknown" summary={`Event this cockpit does not know: ${row.type}`}>
          <LongText text={json(row.event)} label="event" />
        </Collapsible>
      );
  }
}

/** `Check tests: FAILED — 2 passed, 1 failed (3.1 s)`. */
function checkLine(name: string, f: CheckFinished | null): string {
  if (!f) return `Check ${name}: running…`;
  const outcome = { passed: "passed", failed: "FAILED", timedOut: "TIMED OUT", stopped: "stopped", error: "could not run" }[f.outcome];
  const counts = f.passed != null && f.failed != null ? ` — ${f.passed} passed, ${f.failed} failed` : "";
  const why = f.error ? ` — ${f.error}` : f.flag ? ` — ${f.flag}` : "";
  return `Check ${name}: ${outcome}${counts} (${(f.durationMs / 1000).toFixed(1)} s)${why}`;
}

export const RowView = memo(RowImpl, (a, b) => a.row === b.row && a.rev === b.rev && a.cwd === b.cwd);
