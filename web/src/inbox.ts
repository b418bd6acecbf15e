/** One inbox: every open approval and question across sessions and hosts (the page's host and
 *  every other remembered one, `remote/fleet.ts`), highest risk first, then newest; and the
 *  count on the app badge and in the tab title. */
import { useEffect } from "preact/hooks";

import type { ApprovalRequested, Risk, SessionSummary } from "./protocol.gen";
import type { CockpitStore } from "./store";

export interface InboxItem {
  /** The host the session lives on (its relay host id, or "local" for the page's own origin). */
  hostID: string;
  /** That host's store: the request is answered over its own channel. */
  store: CockpitStore;
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
export function inboxItems(store: CockpitStore, hostID = "local"): InboxItem[] {
  return byRisk(hostItems(store, hostID));
}

/** The open requests of several hosts, in one list, highest risk first, then newest. */
export function hostsInboxItems(hosts: Array<{ hostID: string; store: CockpitStore }>): InboxItem[] {
  return byRisk(hosts.flatMap((h) => hostItems(h.store, h.hostID)));
}

function byRisk(items: InboxItem[]): InboxItem[] {
  return items.sort((a, b) => riskRank(b.request.risk) - riskRank(a.request.risk) || b.order - a.order);
}

function hostItems(store: CockpitStore, hostID: string): InboxItem[] {
  const items: InboxItem[] = [];
  for (const s of needingAnswers(store)) {
    const facts = store.transcript(s.sessionID).facts;
    facts.pending.forEach((request, i) => {
      items.push({
        hostID,
        store,
        sessionID: s.sessionID,
        session: s,
        projectName: store.projects.find((p) => p.projectID === s.projectID)?.name ?? null,
        request,
        question: request.toolName === "AskUserQuestion",
        order: s.updatedAt * 1000 + i,
      });
    });
  }
  return items;
}

/** Keeps the transcripts of sessions needing an answer live while the inbox is shown, on every
 *  host given (each over its own connection). */
export function useInboxSessions(stores: CockpitStore | CockpitStore[], onChange: () => void): void {
  const all = Array.isArray(stores) ? stores : [stores];
  const wanted = all.flatMap((store, i) => needingAnswers(store).map((s) => `${i} ${s.sessionID}`));
  const key = wanted.sort().join("\n");
  useEffect(() => {
    const stops = key
      ? key.split("\n").map((line) => {
          const [i, id] = line.split(" ");
          return all[Number(i)].watch(id, onChange);
        })
      : [];
    return () => stops.forEach((stop) => stop());
  }, [all.length, ...all, key]);
}

/** The count on the installed app's icon (where the platform has a badge) and in the title:
 *  every host's awaited answers. */
export function useBadge(stores: CockpitStore | CockpitStore[]): void {
  const n = (Array.isArray(stores) ? stores : [stores]).reduce((sum, s) => sum + inboxCount(s), 0);
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
