// The cockpit reaching a host through the relay: opening a pairing link makes this device's
// key pair, pairs (XXpsk3) and remembers the host; every later connection to a remembered host
// is a fresh IK handshake, and the sync protocol resumes from its seq cursors. The link leaves
// the address bar at once, used or not.
import { generateDeviceKey, webCryptoStaticKey } from "../channel/webcrypto";
import { parsePairingLink } from "./link";
import { currentHostID, forgetHost, pairedHosts, rememberHost, type PairedHost } from "./hosts";
import { ChannelSocket, type RemoteHost } from "./socket";

/** How the cockpit connects when it talks to a host through the relay. */
export interface RemoteDialer {
  /** A new socket to the host (HostConnection calls it for every (re)connect). */
  dial(): ChannelSocket;
  /** The host revoked this device: its key is useless, forget the host. */
  forget(): Promise<void>;
  host: { hostID: string; name: string };
}

/** Which way to dial: a direct address of the host (LAN, tunnel) first while it works, else
 *  the relay; a failure to open moves on to the next. */
function routes(host: PairedHost): { next(): RemoteHost; watch(s: ChannelSocket): void } {
  const ways: RemoteHost[] = [...(host.lan ?? []).map((direct) => ({ ...host, direct })), host];
  let at = 0;
  return {
    next: () => ways[at % ways.length],
    watch: (s) =>
      void s.accepted.then((ok) => {
        if (!ok) at++;
      }),
  };
}

/** Null when this page is not a remote cockpit (no pairing link, no paired host): the local
 *  sign-in applies. Throws when a pairing link is malformed. */
export async function remoteDialer(): Promise<RemoteDialer | null> {
  if (location.hash.startsWith("#pair&")) {
    const link = parsePairingLink(location.hash);
    history.replaceState(null, "", location.pathname);
    if (!link) throw new Error("This pairing link is malformed: run `nucleic pair` for a new one.");
    const key = await generateDeviceKey();
    const host: PairedHost = {
      relay: link.relay,
      hostID: link.hostID,
      hostKey: link.hostKey,
      name: link.name,
      hostName: link.hostName,
      lan: link.lan,
      pairedAt: Date.now(),
      privateKey: key.privateKey,
      publicKey: key.publicKey,
    };
    let paired = false;
    const route = routes(host);
    return {
      host,
      dial: () => {
        const s = new ChannelSocket(route.next(), key.key, paired ? { mode: "connect" } : { mode: "pair", secret: link.secret });
        route.watch(s);
        // Remembered only once the host answered over the channel (it accepted the pairing).
        void s.accepted.then((ok) => {
          if (ok && !paired) {
            paired = true;
            void rememberHost(host);
          }
        });
        return s;
      },
      forget: () => forgetHost(host.hostID),
    };
  }
  const hosts = await pairedHosts();
  const current = currentHostID();
  const host = hosts.find((h) => h.hostID === current) ?? hosts[0];
  return host ? dialerFor(host) : null;
}

/** The dialer of a host paired before: a fresh IK handshake per connection, over its direct
 *  address or the relay. The page's host uses it, and so does the inbox for every other one. */
export function dialerFor(host: PairedHost): RemoteDialer {
  const key = webCryptoStaticKey(host.privateKey, host.publicKey);
  const route = routes(host);
  return {
    host,
    dial: () => {
      const s = new ChannelSocket(route.next(), key, { mode: "connect" });
      route.watch(s);
      return s;
    },
    forget: () => forgetHost(host.hostID),
  };
}
