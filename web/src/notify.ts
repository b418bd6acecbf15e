/** Browser notifications when a session needs a person or finishes while the tab is hidden. */
import type { SessionSummary } from "./protocol.gen";

export function notificationsWanted(): boolean {
  return typeof Notification !== "undefined" && Notification.permission === "granted";
}

export async function askForNotifications(): Promise<NotificationPermission | "unsupported"> {
  if (typeof Notification === "undefined") return "unsupported";
  return Notification.requestPermission();
}

/** The notification a status change deserves, if any. */
export function transitionMessage(before: SessionSummary | undefined, after: SessionSummary): string | null {
  if (!before) {
    // A session this page had not seen yet (started elsewhere) that already waits for a person.
    return after.status === "awaiting-approval" || after.pendingApprovals > 0 ? "needs your approval" : null;
  }
  if (before.status === after.status) {
    return after.pendingApprovals > before.pendingApprovals ? "needs your approval" : null;
  }
  switch (after.status) {
    case "awaiting-approval":
      return "needs your approval";
    case "awaiting-input":
      return before.status === "running" ? "finished its turn and waits for you" : null;
    case "finished":
      return "finished";
    case "error":
      return "stopped with an error";
    case "idle":
    case "running":
      return null;
  }
}

export function notifyTransition(before: SessionSummary | undefined, after: SessionSummary): void {
  const what = transitionMessage(before, after);
  if (!what || typeof document === "undefined" || !document.hidden || !notificationsWanted()) return;
  try {
    const n = new Notification(`${after.title}`, { body: `The agent ${what}.`, tag: after.sessionID });
    n.onclick = () => {
      window.focus();
      location.hash = `#/s/${after.sessionID}`;
      n.close();
    };
  } catch {
    /* some mobile browsers only notify from a service worker */
  }
}
