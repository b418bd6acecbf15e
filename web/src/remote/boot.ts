// The cockpit reaching a host through the relay: opening a pairing link makes this device's
// key pair, pairs (XXpsk3) and remembers the host; every later connection to a remembered host
// is a fresh IK handshake, and the sync protocol resumes from its seq cursors. The link leaves
// the address bar at once, used or not.
import { generateDeviceKey, webCryptoStaticKey } from "../channel/webcrypto";
import { parsePairingLink } from "./link";
import { currentHostID, forgetHost, pairedHosts, rememberHost, type PairedHost } from "./hosts";
import { ChannelSocket } from "./socket";

/** How the cockpit connects when it talks to a host through the relay. */
export interface RemoteDialer {
  /** A new socket to the host (HostConnection calls it for every (re)connect). */
  dial(): ChannelSocket;
  /** The host revoked this device: its key is useless, forget the host. */
  forget(): Promise<void>;
  host: { hostID: string; name: string };
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
      pairedAt: Date.now(),
      privateKey: key.privateKey,
      publicKey: key.publicKey,
    };
    let paired = false;
    return {
      host,
      dial: () => {
        const s = new ChannelSocket(host, key.key, paired ? { mode: "connect" } : { mode: "pair", secret: link.secret });
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
  if (!host) return null;
  const key = webCryptoStaticKey(host.privateKey, host.publicKey);
  return {
    host,
    dial: () => new ChannelSocket(host, key, { mode: "connect" }),
    forget: () => forgetHost(host.hostID),
  };
}
