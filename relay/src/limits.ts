// The relay's caps and rate limits: defaults, overridable per deployment through `[vars]`.

export interface Limits {
  /** Largest device frame (a Noise message is at most 65,535 bytes). */
  maxPayload: number;
  /** Devices connected to one room at once. */
  maxDevices: number;
  /** Host connections waiting to authenticate in one room. */
  maxPendingHosts: number;
  /** Connection attempts to one room: burst, then per second. */
  connectBurst: number;
  connectPerSecond: number;
  /** Each device: frames and bytes, burst and per second. */
  deviceFrameBurst: number;
  deviceFramesPerSecond: number;
  deviceByteBurst: number;
  deviceBytesPerSecond: number;
  /** The whole room (host and devices together): frames and bytes, burst and per second. */
  roomFrameBurst: number;
  roomFramesPerSecond: number;
  roomByteBurst: number;
  roomBytesPerSecond: number;
  /** Milliseconds a host has to answer the challenge. */
  authTimeoutMs: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxPayload: 65535,
  maxDevices: 16,
  maxPendingHosts: 4,
  connectBurst: 40,
  connectPerSecond: 2,
  deviceFrameBurst: 400,
  deviceFramesPerSecond: 200,
  deviceByteBurst: 4 * 1024 * 1024,
  deviceBytesPerSecond: 2 * 1024 * 1024,
  roomFrameBurst: 8000,
  roomFramesPerSecond: 4000,
  roomByteBurst: 64 * 1024 * 1024,
  roomBytesPerSecond: 32 * 1024 * 1024,
  authTimeoutMs: 10_000,
};

/** `RELAY_LIMITS` is JSON with any subset of the fields. */
export function limitsFrom(json: string | undefined): Limits {
  if (!json) return DEFAULT_LIMITS;
  const parsed = JSON.parse(json) as Partial<Limits>;
  return { ...DEFAULT_LIMITS, ...parsed };
}

/** A token bucket. */
export class Bucket {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
  ) {
    this.tokens = burst;
  }

  take(n = 1): boolean {
    const now = Date.now();
    // Time only adds tokens: a wall clock stepped back (NTP, a corrected skew) must not drain the
    // bucket, which would refuse the room for as long as the clock went back.
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }
}
