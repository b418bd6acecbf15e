/** The session pane: header (status, model and permission pickers, usage, interrupt, stop),
 *  the live transcript, the approval bar and the composer. */
import { useEffect, useState } from "preact/hooks";

import { go } from "../route";
import { type CockpitStore, errorText, useTranscript } from "../store";
import { StatusBadge, cost } from "./Badges";
import { Composer } from "./Composer";
import { PullRequestLink } from "./PullRequest";
import { MODES, RulesSheet } from "./RulesSheet";
import { PendingRequest } from "./PlanQuestions";
import { SessionMenu } from "./SessionMenu";
import { TranscriptView } from "./TranscriptView";

function tokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

export function SessionPane({
  store,
  sessionID,
  panes,
  toolsOpen,
  onBack,
  onToggleTools,
}: {
  store: CockpitStore;
  sessionID: string;
  panes: 1 | 2 | 3;
  toolsOpen: boolean;
  onBack?: () => void;
  onToggleTools?: () => void;
}) {
  const transcript = useTranscript(store, sessionID);
  const summary = store.sessions.get(sessionID);
  const facts = transcript.facts;
  const info = summary ? store.backend(summary.backend) : undefined;
  const caps = info?.capabilities ?? null;
  const status = summary?.status ?? facts.status;
  const [error, setError] = useState<string | null>(null);
  const [showNative, setShowNative] = useState(false);
  // On a phone the branch, model, usage and permission details fold behind one tap.
  const [detailsOpen, setDetailsOpen] = useState(false);
  const details = panes > 1 || detailsOpen;
  const [rulesOpen, setRulesOpen] = useState(false);
  const offline = store.link !== "online";
  const live = status === "running" || status === "awaiting-approval";

  const act = async (intent: Parameters<CockpitStore["request"]>[0]) => {
    setError(null);
    try {
      await store.request(intent);
    } catch (e) {
      setError(errorText(e));
    }
  };

  const pending = facts.pending;
  // The latest answer to an approval, and who gave it (another client, maybe).
  const [refused, setRefused] = useState<string | null>(null);
  const lastResolution = [...facts.resolved.values()].pop() ?? null;
  const openID = pending[0]?.requestID;
  useEffect(() => {
    if (openID) setRefused(null);
  }, [openID]);
  const readOnly = summary?.readOnly ?? false;
  const toggleTools = () => {
    if (panes === 3 && onToggleTools) onToggleTools();
    else go({ sessionID, tools: !toolsOpen });
  };

  return (
    <main class="pane session-pane" data-testid="session-pane" data-session={sessionID} data-status={status ?? ""}>
      <header class="pane-head session-head">
        {onBack && (
          <button class="ghost small" onClick={onBack} aria-label="Back to sessions" data-testid="back">
            ←
          </button>
        )}
        <div class="titles">
          <h1 title={summary?.title}>{summary?.title ?? sessionID}</h1>
          <div class="sub">
            <StatusBadge status={status} />
            {panes === 1 && (
              <button class="ghost small details-toggle" aria-expanded={detailsOpen} onClick={() => setDetailsOpen(!detailsOpen)} data-testid="toggle-details">
                {detailsOpen ? "Less" : "Details"}
              </button>
            )}
            {details && <span class="backend">{summary?.backend}</span>}
            {summary?.mode && (
              <span class={`mode mode-${summary.mode}`} data-testid="session-mode" title="Policy mode">
                {summary.mode}
              </span>
            )}
            {details && summary?.worktree && <span class="branch">{summary.worktree.branch}</span>}
            {facts.pullRequest && <PullRequestLink pr={facts.pullRequest} />}
            {details && <span class="usage" data-testid="usage" title={`${facts.usage.inputTokens} in / ${facts.usage.outputTokens} out / ${facts.usage.cachedInputTokens} cached`}>
              {tokens(facts.usage.inputTokens + facts.usage.cachedInputTokens)} in · {tokens(facts.usage.outputTokens)} out ·{" "}
              {cost(Math.max(summary?.costUSD ?? 0, facts.costUSD))}
            </span>}
          </div>
        </div>
        <div class="head-actions">
          {live && caps?.interrupt !== false && (
            <button class="small" disabled={offline} onClick={() => act({ type: "intent", intent: { kind: "interrupt", sessionID } })} data-testid="interrupt">
              Interrupt
            </button>
          )}
          {status && !["finished", "error"].includes(status) && !readOnly && (
            <button class="small danger ghost" disabled={offline} onClick={() => confirm("Stop this agent?") && act({ type: "intent", intent: { kind: "stop", sessionID } })} data-testid="stop">
              Stop
            </button>
          )}
          <button class={`small${toolsOpen ? " active" : ""}`} onClick={toggleTools} data-testid="toggle-tools" aria-pressed={toolsOpen}>
            Tools
          </button>
          <SessionMenu store={store} sessionID={sessionID} onError={setError} />
        </div>
      </header>
      {details && <div class="settings-bar" data-testid="settings-bar">
        <label>
          Model{" "}
          <select
            value={facts.model ?? ""}
            disabled={offline || readOnly || caps?.setModel === false}
            title={caps?.setModel === false ? "This backend cannot change the model mid-session" : undefined}
            onChange={(e) => act({ type: "intent", intent: { kind: "setModel", sessionID, model: e.currentTarget.value } })}
            data-testid="model-picker"
          >
            {[...new Set([facts.model ?? "", ...(info?.models ?? [])])].filter(Boolean).map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        <label>
          Permissions{" "}
          <select
            value={facts.permissionMode ?? "default"}
            disabled={offline || readOnly || caps?.setPermissionMode === false}
            title={caps?.setPermissionMode === false ? "This backend cannot change the permission mode mid-session" : undefined}
            onChange={(e) => act({ type: "intent", intent: { kind: "setPermissionMode", sessionID, mode: e.currentTarget.value } })}
            data-testid="mode-picker"
          >
            {[...new Set([facts.permissionMode ?? "default", ...(info?.permissionModes ?? [])])].map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
        {summary?.mode && (
          <label>
            Mode{" "}
            <select
              value={summary.mode}
              disabled={offline || readOnly}
              onChange={(e) => act({ type: "intent", intent: { kind: "setMode", sessionID, mode: e.currentTarget.value } })}
              data-testid="policy-mode-picker"
            >
              {MODES.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          </label>
        )}
        {!readOnly && (
          <button class="small ghost" disabled={offline} onClick={() => setRulesOpen(true)} data-testid="open-rules">
            Rules
          </button>
        )}
        {transcript.rawCount > 0 && (
          <label class="check native-toggle" title="Native lines the agent printed that have no normalized meaning">
            <input type="checkbox" checked={showNative} onChange={(e) => setShowNative(e.currentTarget.checked)} data-testid="show-native" />
            native lines ({transcript.rawCount})
          </label>
        )}
      </div>}
      {error && (
        <p class="error banner-inline" role="alert">
          {error}
        </p>
      )}
      <TranscriptView transcript={transcript} showNative={showNative} />
      {lastResolution && (
        <p class={`resolution${refused ? " refused" : ""}`} role="status" data-testid="resolved-by">
          {refused ?? `${lastResolution.decision} by ${lastResolution.by}`}
        </p>
      )}
      {pending.length > 0 && !readOnly && (
        <PendingRequest
          store={store}
          sessionID={sessionID}
          request={pending[0]}
          more={pending.length - 1}
          caps={caps}
          onRefused={setRefused}
          cwd={facts.cwd}
        />
      )}
      {!readOnly && (
        <Composer
          store={store}
          sessionID={sessionID}
          disabledReason={pending.length > 0 ? "Answer the approval first" : null}
        />
      )}
      {readOnly && <p class="empty small">Imported session: read-only.</p>}
      {rulesOpen && <RulesSheet store={store} sessionID={sessionID} onClose={() => setRulesOpen(false)} />}
    </main>
  );
}
