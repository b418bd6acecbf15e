// Nucleic's encrypted channel, the device's side: see channel.ts (handshakes, transport) and
// noise.ts (the Noise framework on @noble/* primitives).
export { CONNECT_PROTOCOL, DEFAULT_MAX_MESSAGE, Handshake, MAX_FRAME, MODE_CONNECT, MODE_PAIR, NoiseError, PAIRING_PROTOCOL, Transport, prologue } from "./channel";
export type { HandshakeKind } from "./channel";
export { generateKeyPair, keyPairFromPrivate, staticKey } from "./noise";
export { generateDeviceKey, webCryptoStaticKey } from "./webcrypto";
export type { KeyPair, StaticKey } from "./noise";
