/** Answers the oldest pending approval: allow, allow with edited input, deny with a reason,
 *  always (as a rule for this session, the project or the host). Shows the host's risk class;
 *  a critical request is allowed only after a second, explicit click. Says who answered when
 *  another client was first. The host's own network question (`egress`) is asked as what it
 *  is: allow network access to HOST:PORT — this session, always for the project, or deny. */
import { useEffect, useState } from "preact/hooks";

import type { ApprovalRequested, Capabilities, Decision, RuleScope } from "../protocol.gen";
import { type CockpitStore, errorText } from "../store";
import { egressAsked, patchChanges, relative, toolSummary } from "../transcript";

/** What tapping an answer says while the host is unreachable. */
export const OFFLINE_REFUSAL =
  "You are offline: approval answers are never queued or sent later. Answer again once the host is reachable.";

export function ApprovalBar({
  store,
  sessionID,
  request,
  more,
  caps,
  onRefused,
  cwd,
}: {
  store: CockpitStore;
  sessionID: string;
  request: ApprovalRequested;
  more: number;
  caps: Capabilities | null;
  /** The host refused our answer (e.g. another client answered first). */
  onRefused: (message: string) => void;
  /** The session's working directory (paths are shown relative to it). */
  cwd: string | null;
}) {
  const [mode, setMode] = useState<"ask" | "edit" | "deny" | "always">("ask");
  /** An allowing decision held back until a critical request is confirmed. */
  const [confirming, setConfirming] = useState<Decision | null>(null);
  const [edited, setEdited] = useState("");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<string | null>(null);
  useEffect(() => {
    setMode("ask");
    setConfirming(null);
    setOutcome(null);
    setReason("");
    setEdited(JSON.stringify(request.input, null, 2));
  }, [request.requestID]);

  const critical = request.risk === "critical";
  const decide = async (decision: Decision) => {
    if (store.link !== "online") {
      // Never queued, never replayed: an answer given blind could approve what the agent no
      // longer asks, or what another client already refused.
      setConfirming(null);
      setOutcome(OFFLINE_REFUSAL);
      return;
    }
    const allows = decision.type === "allow" || decision.type === "allowEdited" || decision.type === "allowAlways";
    if (critical && allows && confirming === null) {
      setConfirming(decision);
      return;
    }
    setConfirming(null);
    setBusy(true);
    setOutcome(null);
    try {
      // A critical allow reaches here only after the second click: the host requires it said.
      const confirmed = critical && allows ? { confirmed: true } : {};
      await store.request({ type: "decide", sessionID, requestID: request.requestID, decision, ...confirmed });
    } catch (e) {
      setOutcome(errorText(e));
      onRefused(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const disabled = busy;
  const input = request.input as Record<string, unknown> | null;
  const changes = patchChanges(request.input);
  const preview = changes.length > 0
    ? changes.map((c) => `${c.kind} ${cwd ? relative(c.path, cwd) : c.path}\n${c.diff}`).join("\n")
    : input && typeof input === "object" && typeof input.content === "string"
      ? String(input.content)
      : input && typeof input === "object" && typeof input.new_string === "string"
        ? `${String(input.old_string ?? "")}\n→\n${String(input.new_string)}`
        : null;

  const egress = egressAsked(request);
  if (egress) {
    const how = egress.method === "CONNECT" ? "an HTTPS connection" : `a plain HTTP ${egress.method}`;
    const denied = reason.trim() || "Denied from the cockpit.";
    return (
      <section class="approval-bar" role="region" aria-label="Network access" data-testid="approval-bar" data-request={request.requestID}>
        <div class="ask">
          <strong data-testid="egress-question">
            Allow network access to {egress.host}:{egress.port}?
          </strong>
          {more > 0 && <span class="badge pending">+{more} more</span>}
          <div class="description">
            Not on this project's egress allow-list. The agent's command waits ({how}) until you answer, or until the question times out.
          </div>
        </div>
        {mode === "deny" && (
          <input class="reason" placeholder="Why not? (in the refusal the agent sees)" value={reason} onInput={(e) => setReason(e.currentTarget.value)} data-testid="deny-reason" />
        )}
        {outcome && (
          <p class="outcome" role="status" data-testid="approval-error">
            {outcome}
          </p>
        )}
        <div class="actions">
          {mode === "deny" ? (
            <>
              <button class="danger" disabled={disabled} onClick={() => decide({ type: "deny", message: denied })} data-testid="send-deny">
                Deny
              </button>
              <button class="ghost" onClick={() => setMode("ask")}>
                Back
              </button>
            </>
          ) : (
            <>
              <button class="primary" disabled={disabled} onClick={() => decide({ type: "allow" })} data-testid="allow">
                Allow for this session
              </button>
              <button disabled={disabled} onClick={() => decide({ type: "allowAlways", scope: "project" })} data-testid="egress-always" title="Add it to the project's sandbox: every session of the project may reach it">
                Always for this project
              </button>
              <button class="danger" disabled={disabled} onClick={() => setMode("deny")} data-testid="deny">
                Deny…
              </button>
            </>
          )}
        </div>
      </section>
    );
  }

  return (
    <section class="approval-bar" role="region" aria-label="Approval" data-testid="approval-bar" data-request={request.requestID}>
      <div class="ask">
        <strong>{request.toolName}</strong> <code>{toolSummary(request.input, cwd)}</code>
        {more > 0 && <span class="badge pending">+{more} more</span>}
        {request.description && <div class="description">{request.description}</div>}
        {request.blockedPath && <div class="description">Outside the workspace: {request.blockedPath}</div>}
        {request.risk && (
          <div class="description">
            <span class={`badge risk-${request.risk}`} data-testid="risk">
              {request.risk}
            </span>{" "}
            {(request.riskReasons ?? []).join(", ")}
          </div>
        )}
        {preview && <pre class="preview">{preview.slice(0, 2000)}</pre>}
      </div>
      {mode === "edit" && (
        <textarea class="edit" rows={6} value={edited} onInput={(e) => setEdited(e.currentTarget.value)} data-testid="edited-input" />
      )}
      {mode === "deny" && (
        <input class="reason" placeholder="Why not? (sent to the agent)" value={reason} onInput={(e) => setReason(e.currentTarget.value)} data-testid="deny-reason" />
      )}
      {outcome && (
        <p class="outcome" role="status" data-testid="approval-error">
          {outcome}
        </p>
      )}
      <div class="actions">
        {confirming !== null && (
          <>
            <span class="outcome">Critical: are you sure?</span>
            <button class="danger" disabled={disabled} onClick={() => decide(confirming)} data-testid="confirm-critical">
              Yes, allow
            </button>
            <button class="ghost" onClick={() => setConfirming(null)}>
              Back
            </button>
          </>
        )}
        {confirming === null && mode === "always" && (
          <>
            {(["session", "project", "host"] as RuleScope[]).map((scope) => (
              <button key={scope} disabled={disabled} onClick={() => decide({ type: "allowAlways", scope })} data-testid={`always-${scope}`}>
                {scope === "session" ? "This session" : scope === "project" ? "This project" : "Every project"}
              </button>
            ))}
            <button class="ghost" onClick={() => setMode("ask")}>
              Back
            </button>
          </>
        )}
        {confirming === null && mode === "ask" && (
          <>
            <button class="primary" disabled={disabled} onClick={() => decide({ type: "allow" })} data-testid="allow">
              Allow
            </button>
            {caps?.allowAlways !== false && (
              <button disabled={disabled} onClick={() => setMode("always")} data-testid="allow-always" title="Always allow calls like this one: as a rule for this session, the project or every project">
                Always
              </button>
            )}
            {caps?.editedToolInput !== false && (
              <button disabled={disabled} onClick={() => setMode("edit")} data-testid="allow-edited">
                Edit…
              </button>
            )}
            <button class="danger" disabled={disabled} onClick={() => setMode("deny")} data-testid="deny">
              Deny…
            </button>
          </>
        )}
        {confirming === null && mode === "edit" && (
          <>
            <button
              class="primary"
              disabled={disabled}
              onClick={() => {
                let updatedInput;
                try {
                  updatedInput = JSON.parse(edited);
                } catch (e) {
                  setOutcome(`The edited input is not valid JSON: ${errorText(e)}`);
                  return;
                }
                void decide({ type: "allowEdited", updatedInput });
              }}
              data-testid="send-edited"
            >
              Allow edited
            </button>
            <button class="ghost" onClick={() => setMode("ask")}>
              Back
            </button>
          </>
        )}
        {confirming === null && mode === "deny" && (
          <>
            <button class="danger" disabled={disabled} onClick={() => decide({ type: "deny", message: reason.trim() || "Denied by the user." })} data-testid="send-deny">
              Deny
            </button>
            {caps?.denyAndStop !== false && (
              <button class="danger ghost" disabled={disabled} onClick={() => decide({ type: "denyAndStop", message: reason.trim() || "Denied by the user." })}>
                Deny and stop
              </button>
            )}
            <button class="ghost" onClick={() => setMode("ask")}>
              Back
            </button>
          </>
        )}
      </div>
    </section>
  );
}
