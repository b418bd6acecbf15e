import { describe, expect, it } from "vitest";
import type { HostMessage } from "./protocol.gen";
import { resultOf } from "./results";

describe("resultOf", () => {
  it("gives the result of the kind asked for, and null for anything else", () => {
    const ack: HostMessage = { type: "ack", messageID: "m1", result: { kind: "handoff", command: "claude --resume c1" } };
    expect(resultOf(ack, "handoff")?.command).toBe("claude --resume c1");
    expect(resultOf(ack, "session")).toBeNull();
    expect(resultOf({ type: "ack", messageID: "m2" }, "handoff")).toBeNull();
    const error: HostMessage = { type: "error", messageID: "m3", code: "notFound", message: "no session" };
    expect(resultOf(error, "handoff")).toBeNull();
  });
});
