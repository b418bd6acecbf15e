/** Entry: signs this browser in (a one-time `/login?token=…` link registers a device key), then
 *  starts the store and renders the cockpit; without a device, the signed-out page. */
import { render } from "preact";

import { App } from "./components/App";
import { SignedOut } from "./components/SignedOut";
import { type StoredDevice, SignedOutError, loadDevice, proveDevice, registerDevice } from "./device";
import { keepSnapshot } from "./offline/snapshot";
import { registerWorker, updateForProtocol } from "./offline/worker";
import { remoteDialer } from "./remote/boot";
import { HostFleet } from "./remote/fleet";
import { CockpitStore } from "./store";
import "./styles.css";

/** The name a test or a person gave this browser, if any (else the host names it). */
function chosenName(): string | undefined {
  try {
    return localStorage.getItem("nucleic.clientName") ?? undefined;
  } catch {
    return undefined;
  }
}

async function signIn(): Promise<StoredDevice | null> {
  if (location.pathname === "/login") {
    const token = new URLSearchParams(location.search).get("token") ?? "";
    // The token leaves the address bar (and history) at once, used or not.
    history.replaceState(null, "", "/");
    return registerDevice(token, chosenName());
  }
  return loadDevice();
}

async function boot(): Promise<void> {
  const root = document.getElementById("app");
  if (!root) return;
  // The app shell for next time (and offline); push needs it too.
  void registerWorker();
  // Through the relay: a pairing link, or a host paired before.
  let remote;
  try {
    remote = await remoteDialer();
  } catch (e) {
    render(<SignedOut reason="badLink" detail={e instanceof Error ? e.message : String(e)} />, root);
    return;
  }
  if (remote) {
    const store = new CockpitStore("", undefined, undefined, remote);
    (window as unknown as { nucleic: CockpitStore }).nucleic = store;
    store.start();
    render(<App store={store} fleet={startFleet(store)} />, root);
    return;
  }
  let device: StoredDevice | null;
  try {
    device = await signIn();
  } catch (e) {
    const reason = e instanceof SignedOutError ? e.reason : "badLink";
    render(<SignedOut reason={reason} detail={e instanceof Error ? e.message : String(e)} />, root);
    return;
  }
  if (!device) {
    render(<SignedOut reason="signedOut" />, root);
    return;
  }
  const signed = device;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const store = new CockpitStore(`${scheme}://${location.host}/ws`, () => proveDevice(signed), signed.deviceID);
  // For tests and debugging: the live store (seq cursors, gap counters).
  (window as unknown as { nucleic: CockpitStore }).nucleic = store;
  // An older app (from the cache) than the host speaks: take the current one.
  store.onProtocolMismatch = () => updateForProtocol();
  // The last known state while the host is out of reach, marked stale.
  void keepSnapshot(store);
  store.start();
  render(<App store={store} fleet={startFleet(store)} />, root);
}

/** Connections to every other remembered host, for the one inbox and the badge. */
function startFleet(store: CockpitStore): HostFleet {
  const fleet = new HostFleet(store);
  (window as unknown as { nucleicFleet: HostFleet }).nucleicFleet = fleet;
  void fleet.start();
  return fleet;
}

void boot();
