/** Asks once for permission to notify when a session needs a person while the tab is hidden. */
import { useState } from "preact/hooks";

import { askForNotifications } from "../notify";

export function NotifyButton() {
  const [perm, setPerm] = useState(() => (typeof Notification === "undefined" ? "unsupported" : Notification.permission));
  if (perm !== "default") return null;
  return (
    <button class="ghost small" title="Notify me when a session needs approval or input, or finishes" onClick={async () => setPerm(await askForNotifications())} data-testid="enable-notifications">
      Notify
    </button>
  );
}
