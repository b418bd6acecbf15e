// A device's static key kept non-extractable by the browser: a WebCrypto X25519 CryptoKey (Chrome
// 133+, Firefox 130+, Safari 17+) does the Noise handshake's DH without its bytes ever reaching
// JavaScript, and can be stored in IndexedDB as it is (as device.ts does with the ECDSA key).
import { NoiseError, type StaticKey } from "./noise";

/** A fresh non-extractable X25519 key pair, and the StaticKey that uses it. */
export async function generateDeviceKey(): Promise<{ privateKey: CryptoKey; publicKey: Uint8Array; key: StaticKey }> {
  const pair = (await crypto.subtle.generateKey({ name: "X25519" }, false, ["deriveBits"])) as CryptoKeyPair;
  const publicKey = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  return { privateKey: pair.privateKey, publicKey, key: webCryptoStaticKey(pair.privateKey, publicKey) };
}

/** The StaticKey of a stored non-extractable key. */
export function webCryptoStaticKey(privateKey: CryptoKey, publicKey: Uint8Array): StaticKey {
  return {
    publicKey,
    async dh(remote: Uint8Array): Promise<Uint8Array> {
      if (remote.length !== 32) throw new NoiseError("a public key must be 32 bytes");
      try {
        const peer = await crypto.subtle.importKey("raw", new Uint8Array(remote), { name: "X25519" }, false, []);
        return new Uint8Array(await crypto.subtle.deriveBits({ name: "X25519", public: peer }, privateKey, 256));
      } catch {
        throw new NoiseError("invalid (low-order) public key");
      }
    },
  };
}
