/** Plans and questions an agent puts to a person. A plan (ExitPlanMode) is shown as rendered
 *  markdown with Approve — in the mode chosen to execute it (readonly / edit / full) — and Reject
 *  with feedback the agent revises from. Questions (AskUserQuestion) are shown with their
 *  choices (several where the question allows) and an "Other" free-text answer. */
import { useEffect, useState } from "preact/hooks";

import { renderMarkdown } from "../markdown";
import type { ApprovalRequested, Capabilities, Decision, QuestionAnswer, SessionMode } from "../protocol.gen";
import { type CockpitStore, errorText } from "../store";
import { ApprovalBar } from "./ApprovalBar";

type Props = {
  store: CockpitStore;
  sessionID: string;
  request: ApprovalRequested;
  more: number;
  /** The host refused our answer (e.g. another client answered first). */
  onRefused: (message: string) => void;
};

/** The card for one pending request: a plan, questions, or the approval bar for anything else. */
export function PendingRequest(props: Props & { caps: Capabilities | null; cwd: string | null }) {
  if (props.request.toolName === "ExitPlanMode") return <PlanCard {...props} />;
  if (props.request.toolName === "AskUserQuestion") return <QuestionCard {...props} />;
  return <ApprovalBar {...props} />;
}

/** Sends a decision; returns the host's refusal, if any. */
async function send(store: CockpitStore, sessionID: string, requestID: string, decision: Decision): Promise<string | null> {
  try {
    await store.request({ type: "decide", sessionID, requestID, decision });
    return null;
  } catch (e) {
    return errorText(e);
  }
}

const MODES: { mode: SessionMode; label: string; hint: string }[] = [
  { mode: "readonly", label: "Read-only", hint: "reads only; writes and unknown commands refused" },
  { mode: "edit", label: "Edit", hint: "edits in the worktree; unknown commands asked" },
  { mode: "full", label: "Full", hint: "as edit; installs and pushes asked instead of refused" },
];

export function PlanCard({ store, sessionID, request, more, onRefused }: Props) {
  const [mode, setMode] = useState<SessionMode>("edit");
  const [rejecting, setRejecting] = useState(false);
  const [feedback, setFeedback] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<string | null>(null);
  useEffect(() => {
    setRejecting(false);
    setFeedback("");
    setOutcome(null);
  }, [request.requestID]);
  const input = request.input as { plan?: unknown; planFilePath?: unknown } | null;
  const plan = typeof input?.plan === "string" ? input.plan : "";
  const decide = async (decision: Decision) => {
    setBusy(true);
    setOutcome(null);
    const refused = await send(store, sessionID, request.requestID, decision);
    setBusy(false);
    if (refused) {
      setOutcome(refused);
      onRefused(refused);
    }
  };
  const disabled = busy || store.link !== "online";
  return (
    <section class="approval-bar plan-card" role="region" aria-label="Plan" data-testid="plan-card" data-request={request.requestID}>
      <div class="ask">
        <strong>Plan</strong> <span class="description">The agent asks to go ahead with this plan.</span>
        {more > 0 && <span class="badge pending">+{more} more</span>}
      </div>
      <div class="markdown plan" data-testid="plan-text" dangerouslySetInnerHTML={{ __html: renderMarkdown(plan || "*(empty plan)*") }} />
      {outcome && (
        <p class="outcome" role="status" data-testid="approval-error">
          {outcome}
        </p>
      )}
      {rejecting ? (
        <>
          <textarea class="edit" rows={3} placeholder="What should change? (sent to the agent, which revises the plan)" value={feedback} onInput={(e) => setFeedback(e.currentTarget.value)} data-testid="plan-feedback" />
          <div class="actions">
            <button class="danger" disabled={disabled || !feedback.trim()} onClick={() => decide({ type: "deny", message: feedback.trim() })} data-testid="send-plan-feedback">
              Send feedback
            </button>
            <button class="ghost" onClick={() => setRejecting(false)}>
              Back
            </button>
          </div>
        </>
      ) : (
        <>
          <fieldset class="modes" data-testid="plan-modes">
            <legend>Execute in</legend>
            {MODES.map((m) => (
              <label key={m.mode} title={m.hint}>
                <input type="radio" name={`plan-mode-${request.requestID}`} value={m.mode} checked={mode === m.mode} onChange={() => setMode(m.mode)} data-testid={`plan-mode-${m.mode}`} /> {m.label}
              </label>
            ))}
          </fieldset>
          <div class="actions">
            <button class="primary" disabled={disabled || !plan} onClick={() => decide({ type: "approvePlan", mode })} data-testid="approve-plan">
              Approve
            </button>
            <button class="danger" disabled={disabled} onClick={() => setRejecting(true)} data-testid="reject-plan">
              Reject…
            </button>
          </div>
        </>
      )}
    </section>
  );
}

type Asked = { question: string; header: string; multiSelect: boolean; options: { label: string; description: string }[] };

/** The questions of an AskUserQuestion input (what is not understood is left out). */
export function askedQuestions(input: unknown): Asked[] {
  const list = (input as { questions?: unknown } | null)?.questions;
  if (!Array.isArray(list)) return [];
  return list
    .filter((q): q is Record<string, unknown> => !!q && typeof q === "object" && typeof (q as { question?: unknown }).question === "string")
    .map((q) => ({
      question: String(q.question),
      header: typeof q.header === "string" ? q.header : "",
      multiSelect: q.multiSelect === true,
      options: (Array.isArray(q.options) ? q.options : [])
        .filter((o): o is Record<string, unknown> => !!o && typeof o === "object" && typeof (o as { label?: unknown }).label === "string")
        .map((o) => ({ label: String(o.label), description: typeof o.description === "string" ? o.description : "" })),
    }));
}

export function QuestionCard({ store, sessionID, request, more, onRefused }: Props) {
  const questions = askedQuestions(request.input);
  const [choices, setChoices] = useState<Record<string, string[]>>({});
  const [other, setOther] = useState<Record<string, string>>({});
  const [declining, setDeclining] = useState(false);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<string | null>(null);
  useEffect(() => {
    setChoices({});
    setOther({});
    setDeclining(false);
    setOutcome(null);
  }, [request.requestID]);
  const pick = (q: Asked, label: string, on: boolean) => {
    const now = choices[q.question] ?? [];
    const next = q.multiSelect ? (on ? [...now, label] : now.filter((l) => l !== label)) : on ? [label] : [];
    setChoices({ ...choices, [q.question]: next });
  };
  const answers: QuestionAnswer[] = questions.map((q) => ({
    question: q.question,
    choices: choices[q.question] ?? [],
    ...(other[q.question]?.trim() ? { other: other[q.question].trim() } : {}),
  }));
  const complete = answers.every((a) => (a.choices ?? []).length > 0 || (a.other ?? "") !== "");
  const decide = async (decision: Decision) => {
    setBusy(true);
    setOutcome(null);
    const refused = await send(store, sessionID, request.requestID, decision);
    setBusy(false);
    if (refused) {
      setOutcome(refused);
      onRefused(refused);
    }
  };
  const disabled = busy || store.link !== "online";
  return (
    <section class="approval-bar question-card" role="region" aria-label="Questions" data-testid="question-card" data-request={request.requestID}>
      <div class="ask">
        <strong>The agent asks</strong>
        {more > 0 && <span class="badge pending">+{more} more</span>}
      </div>
      {questions.map((q, i) => (
        <fieldset key={q.question} class="question" data-testid="question" data-question={q.question}>
          <legend>
            {q.header && <span class="badge">{q.header}</span>} {q.question}
            {q.multiSelect && <span class="description"> (choose any)</span>}
          </legend>
          {q.options.map((o) => (
            <label key={o.label} class="choice">
              <input
                type={q.multiSelect ? "checkbox" : "radio"}
                name={`q-${request.requestID}-${i}`}
                checked={(choices[q.question] ?? []).includes(o.label)}
                onChange={(e) => pick(q, o.label, e.currentTarget.checked)}
                data-testid="choice"
                data-label={o.label}
              />{" "}
              {o.label}
              {o.description && <span class="description"> — {o.description}</span>}
            </label>
          ))}
          <input class="reason" placeholder="Other…" value={other[q.question] ?? ""} onInput={(e) => setOther({ ...other, [q.question]: e.currentTarget.value })} data-testid="other" />
        </fieldset>
      ))}
      {outcome && (
        <p class="outcome" role="status" data-testid="approval-error">
          {outcome}
        </p>
      )}
      {declining ? (
        <div class="actions">
          <input class="reason" placeholder="Why not answer? (sent to the agent)" value={reason} onInput={(e) => setReason(e.currentTarget.value)} data-testid="decline-reason" />
          <button class="danger" disabled={disabled} onClick={() => decide({ type: "deny", message: reason.trim() || "The user declined to answer." })} data-testid="send-decline">
            Decline
          </button>
          <button class="ghost" onClick={() => setDeclining(false)}>
            Back
          </button>
        </div>
      ) : (
        <div class="actions">
          <button class="primary" disabled={disabled || !complete || questions.length === 0} onClick={() => decide({ type: "answer", answers })} data-testid="send-answers">
            Answer
          </button>
          <button class="danger" disabled={disabled} onClick={() => setDeclining(true)} data-testid="decline">
            Decline…
          </button>
        </div>
      )}
    </section>
  );
}
