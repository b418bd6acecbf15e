/** Typed `ack` results: the host tags each `ack.result` with its `kind` (`IntentResult` in the
 *  generated protocol types), so a component asks for the kind it expects and gets its fields,
 *  or null — never a cast. */
import type { HostMessage, IntentResult } from "./protocol.gen";

/** The result of one `kind`. */
export type ResultOf<K extends IntentResult["kind"]> = Extract<IntentResult, { kind: K }>;

function isKind<K extends IntentResult["kind"]>(result: IntentResult, kind: K): result is ResultOf<K> {
  return result.kind === kind;
}

/** `reply`'s result when it is an `ack` carrying a result of `kind`, else null. */
export function resultOf<K extends IntentResult["kind"]>(reply: HostMessage, kind: K): ResultOf<K> | null {
  if (reply.type !== "ack" || !reply.result) return null;
  return isKind(reply.result, kind) ? reply.result : null;
}
