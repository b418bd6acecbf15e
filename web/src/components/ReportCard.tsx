/** The host's report: contradictions first (the agent's words quoted, the fact that wins), then
 *  the facts — files, lines, commits, checks, approvals, cost. Small and readable on a phone. */
import type { Report } from "../protocol.gen";

export function ReportCard({ report: r, seq }: { report: Report; seq: number }) {
  const failing = r.checks.filter((c) => c.outcome !== "passed");
  const clean = r.contradictions.length === 0 && failing.length === 0;
  return (
    <section class={`row report ${clean ? "clean" : "flagged"}`} data-kind="report" data-seq={seq} data-testid="report">
      <h4>
        Report: {clean ? "facts agree" : r.contradictions.length > 0 ? `${r.contradictions.length} contradiction${r.contradictions.length === 1 ? "" : "s"}` : "checks fail"}
      </h4>
      {r.contradictions.length > 0 && (
        <ul class="contradictions">
          {r.contradictions.map((c) => (
            <li key={c.claim + c.fact} data-testid="contradiction">
              <q>{c.claim}</q> — but {c.fact}
            </li>
          ))}
        </ul>
      )}
      <dl class="facts">
        <dt>Files</dt>
        <dd>
          {r.files.length} (+{r.additions} −{r.deletions})
          {r.outsideTask && r.outsideTask.length > 0 && <span class="warn"> · outside the task: {r.outsideTask.join(", ")}</span>}
        </dd>
        <dt>Commits</dt>
        <dd>
          {r.ahead} ahead, {r.behind} behind
        </dd>
        <dt>Checks</dt>
        <dd>{r.checks.length === 0 ? "none ran" : r.checks.map((c) => `${c.name} ${c.outcome}${c.failed != null ? ` (${c.passed ?? 0}✓ ${c.failed}✗)` : ""}`).join(", ")}</dd>
        <dt>Approvals</dt>
        <dd>
          {r.approvalsAsked} asked, {r.approvalsDenied} denied · ${r.costUSD.toFixed(4)}
        </dd>
      </dl>
    </section>
  );
}
