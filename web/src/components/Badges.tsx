/** Small shared pieces: status badges, costs, relative times. */
import type { SessionStatus, SessionSummary } from "../protocol.gen";

const LABEL: Record<SessionStatus, string> = {
  idle: "idle",
  running: "running",
  "awaiting-approval": "needs approval",
  "awaiting-input": "needs input",
  finished: "finished",
  error: "error",
};

export function StatusBadge({ status }: { status: SessionStatus | null | undefined }) {
  if (!status) return null;
  return (
    <span class={`badge status-${status}`} data-status={status}>
      {status === "running" && <span class="pulse" aria-hidden="true" />}
      {LABEL[status] ?? status}
    </span>
  );
}

export function cost(usd: number): string {
  if (!usd) return "$0";
  return usd < 0.01 ? "<$0.01" : `$${usd.toFixed(2)}`;
}

export function ago(ms: number, now = Date.now()): string {
  if (!ms) return "";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

export function SessionMeta({ s }: { s: SessionSummary }) {
  return (
    <span class="meta">
      {s.pendingApprovals > 0 && (
        <span class="badge pending" data-testid="pending-count" title="pending approvals">
          {s.pendingApprovals} pending
        </span>
      )}
      <span class="cost">{cost(s.costUSD)}</span>
      <span class="ago">{ago(s.updatedAt)}</span>
    </span>
  );
}
