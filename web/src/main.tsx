/** Entry: checks the browser is signed in, then starts the store and renders the cockpit. */
import { render } from "preact";

import { App } from "./components/App";
import { SignedOut } from "./components/SignedOut";
import { CockpitStore } from "./store";
import "./styles.css";

async function boot(): Promise<void> {
  const root = document.getElementById("app");
  if (!root) return;
  let status = 0;
  try {
    // Bounded: a host that does not answer must not leave a blank page (the app then shows
    // its own connection state and keeps retrying).
    status = (await fetch("/api/session", { credentials: "same-origin", signal: AbortSignal.timeout(5000) })).status;
  } catch {
    status = -1;
  }
  if (status === 401 || status === 403) {
    render(<SignedOut reason={status === 403 ? "refused" : "signedOut"} />, root);
    return;
  }
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const store = new CockpitStore(`${scheme}://${location.host}/ws`);
  // For tests and debugging: the live store (seq cursors, gap counters).
  (window as unknown as { nucleic: CockpitStore }).nucleic = store;
  store.start();
  render(<App store={store} />, root);
}

void boot();
