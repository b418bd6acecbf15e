/** One inbox: every open approval and question across sessions (and hosts — one today; the
 *  remote work adds more), highest risk first, then newest; and the count on the app badge
 *  and in the tab title. */
import { useEffect } from "preact/hooks";

import type { ApprovalRequested, Risk, SessionSummary } from "./protocol.gen";
import type { CockpitStore } from "./store";

export interface InboxItem {
  /** The host the session lives on ("local" until several hosts are connected). */
  hostID: string;
  sessionID: string;
  session: SessionSummary | undefined;
  projectName: string | null;
  request: ApprovalRequested;
  /** A question to answer (AskUserQuestion), not a tool to allow. */
  question: boolean;
  /** Position among all open requests, larger = asked later (for newest first). */
  order: number;
}

const RISK_RANK: Record<Risk, number> = { critical: 4, high: 3, medium: 2, low: 1 };

export function riskRank(r: Risk | null | undefined): number {
  return r ? RISK_RANK[r] : 0;
}

/** Sessions with something to answer, by their summaries (no subscription needed). */
export function needingAnswers(store: CockpitStore): SessionSummary[] {
  return [...store.sessions.values()].filter((s) => !s.readOnly && (s.pendingApprovals > 0 || s.status === "awaiting-approval"));
}

/** How many answers are awaited, from the summaries (what the badge shows). */
export function inboxCount(store: CockpitStore): number {
  return needingAnswers(store).reduce((n, s) => n + Math.max(s.pendingApprovals, s.status === "awaiting-approval" ? 1 : 0), 0);
}

/** The open requests of every session needing an answer, highest risk first, then newest. */
export function inboxItems(store: CockpitStore): InboxItem[] {
  const items: InboxItem[] = [];
  for (const s of needingAnswers(store)) {
    const facts = store.transcript(s.sessionID).facts;
    facts.pending.forEach((request, i) => {
      items.push({
        hostID: "local",
        sessionID: s.sessionID,
        session: s,
        projectName: store.projects.find((p) => p.projectID === s.projectID)?.name ?? null,
        request,
        question: request.toolName === "AskUserQuestion",
        order: s.updatedAt * 1000 + i,
      });
    });
  }
  return items.sort((a, b) => riskRank(b.request.risk) - riskRank(a.request.risk) || b.order - a.order);
}

/** Keeps the transcripts of sessions needing an answer live while the inbox is shown. */
export function useInboxSessions(store: CockpitStore, onChange: () => void): void {
  const ids = needingAnswers(store)
    .map((s) => s.sessionID)
    .sort()
    .join("\n");
  useEffect(() => {
    const stops = ids ? ids.split("\n").map((id) => store.watch(id, onChange)) : [];
    return () => stops.forEach((stop) => stop());
  }, [store, ids]);
}

/** The count on the installed app's icon (where the platform has a badge) and in the title. */
export function useBadge(store: CockpitStore): void {
  const n = inboxCount(store);
  useEffect(() => {
    const base = document.title.replace(/^\(\d+\) /, "");
    document.title = n > 0 ? `(${n}) ${base}` : base;
    const nav = navigator as Navigator & { setAppBadge?: (n?: number) => Promise<void>; clearAppBadge?: () => Promise<void> };
    try {
      if (n > 0) void nav.setAppBadge?.(n)?.catch(() => {});
      else void nav.clearAppBadge?.()?.catch(() => {});
    } catch {
      /* no badge on this platform */
    }
  }, [n]);
}
