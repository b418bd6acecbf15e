// The approval bar: the host's risk class is shown, a critical request needs a second click
// before it is allowed, and "Always" asks for the scope of the rule.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it } from "vitest";

import type { ApprovalRequested } from "../protocol.gen";
import type { CockpitStore } from "../store";
import { ApprovalBar } from "./ApprovalBar";

function setup(request: ApprovalRequested, link = "online") {
  const sent: unknown[] = [];
  const store = { link, request: async (m: unknown) => void sent.push(m) } as unknown as CockpitStore;
  const root = document.createElement("div");
  document.body.append(root);
  act(() => {
    render(<ApprovalBar store={store} sessionID="s1" request={request} more={0} caps={null} onRefused={() => {}} cwd={null} />, root);
  });
  const click = async (testid: string) => {
    const button = root.querySelector<HTMLButtonElement>(`[data-testid=${testid}]`);
    if (!button) throw new Error(`no ${testid}`);
    await act(async () => button.click());
  };
  return { root, sent, click };
}

const ask = (risk: ApprovalRequested["risk"]): ApprovalRequested => ({
  requestID: "r1",
  toolName: "Bash",
  input: { command: "shutdown -h now" },
  risk,
  riskReasons: ["could take the machine down"],
});

afterEach(() => {
  document.body.innerHTML = "";
});

describe("ApprovalBar", () => {
  it("asks a second time before allowing a critical request", async () => {
    const { root, sent, click } = setup(ask("critical"));
    expect(root.querySelector("[data-testid=risk]")?.textContent).toBe("critical");
    expect(root.textContent).toContain("could take the machine down");
    await click("allow");
    expect(sent).toEqual([]);
    await click("confirm-critical");
    expect(sent).toEqual([{ type: "decide", sessionID: "s1", requestID: "r1", decision: { type: "allow" }, confirmed: true }]);
  });

  it("allows a lower risk at once, and Always asks for the rule's scope", async () => {
    const { sent, click } = setup(ask("medium"));
    await click("allow");
    expect(sent).toHaveLength(1);
    await click("allow-always");
    await click("always-project");
    expect(sent[1]).toEqual({ type: "decide", sessionID: "s1", requestID: "r1", decision: { type: "allowAlways", scope: "project" } });
  });

  it("asks the host's network question as what it is: this session, the project, or deny", async () => {
    const question: ApprovalRequested = {
      requestID: "egress-1",
      toolName: "egress",
      input: { host: "pkg.test", port: 8443, method: "CONNECT" },
      description: "allow network access to pkg.test:8443?",
      risk: "medium",
      riskReasons: ["network: a destination not on the allow-list"],
    };
    const { root, sent, click } = setup(question);
    expect(root.querySelector("[data-testid=egress-question]")?.textContent).toBe("Allow network access to pkg.test:8443?");
    expect(root.querySelector("[data-testid=allow-edited]")).toBeNull();
    await click("allow");
    await click("egress-always");
    await click("deny");
    await click("send-deny");
    expect(sent.map((m) => (m as { decision: unknown }).decision)).toEqual([
      { type: "allow" },
      { type: "allowAlways", scope: "project" },
      { type: "deny", message: "Denied from the cockpit." },
    ]);
  });

  it("offline, an answer is refused with a clear message and nothing is sent or kept", async () => {
    const { root, sent, click } = setup(ask("medium"), "offline");
    await click("allow");
    expect(sent).toEqual([]);
    expect(root.querySelector("[data-testid=approval-error]")?.textContent).toMatch(/offline.*never queued or sent later/);
    // A critical allow offline is refused before its second confirmation, too.
    const critical = setup({ ...ask("critical"), requestID: "r2" }, "offline");
    await critical.click("allow");
    expect(critical.root.querySelector("[data-testid=confirm-critical]")).toBeNull();
    expect(critical.sent).toEqual([]);
  });
});
