// Plans and questions in the cockpit: the plan is rendered as markdown and approved in the
// chosen mode or rejected with feedback; questions are answered with their choices (several
// where allowed) or free text.
import { render } from "preact";
import { act } from "preact/test-utils";
import { afterEach, describe, expect, it } from "vitest";

import type { ApprovalRequested } from "../protocol.gen";
import type { CockpitStore } from "../store";
import { PlanCard, QuestionCard } from "./PlanQuestions";

function setup(card: "plan" | "questions", request: ApprovalRequested) {
  const sent: unknown[] = [];
  const store = { link: "online", request: async (m: unknown) => void sent.push(m) } as unknown as CockpitStore;
  const root = document.createElement("div");
  document.body.append(root);
  const Card = card === "plan" ? PlanCard : QuestionCard;
  act(() => {
    render(<Card store={store} sessionID="s1" request={request} more={0} onRefused={() => {}} />, root);
  });
  const el = <T extends HTMLElement>(selector: string) => {
    const found = root.querySelector<T>(selector);
    if (!found) throw new Error(`no ${selector}`);
    return found;
  };
  const click = async (selector: string) => act(async () => el(selector).click());
  const type = async (selector: string, text: string) =>
    act(async () => {
      const input = el<HTMLInputElement>(selector);
      input.value = text;
      input.dispatchEvent(new Event("input", { bubbles: true }));
    });
  return { root, sent, el, click, type };
}

const plan: ApprovalRequested = {
  requestID: "p1",
  toolName: "ExitPlanMode",
  input: { plan: "# Plan\n\n1. Write `a.txt`\n2. Run the tests", planFilePath: "/h/.claude/plans/x.md" },
};

const questions: ApprovalRequested = {
  requestID: "q1",
  toolName: "AskUserQuestion",
  input: {
    questions: [
      { question: "Which color?", header: "Color", multiSelect: false, options: [{ label: "Red", description: "warm" }, { label: "Blue", description: "cool" }] },
      { question: "Which sizes?", header: "Sizes", multiSelect: true, options: [{ label: "S", description: "" }, { label: "M", description: "" }] },
    ],
  },
};

afterEach(() => {
  document.body.innerHTML = "";
});

describe("PlanCard", () => {
  it("renders the plan and approves it in the chosen mode", async () => {
    const { el, sent, click } = setup("plan", plan);
    expect(el("[data-testid=plan-text] h1").textContent).toBe("Plan");
    expect(el("[data-testid=plan-text] code").textContent).toBe("a.txt");
    await click("[data-testid=plan-mode-full]");
    await click("[data-testid=approve-plan]");
    expect(sent).toEqual([{ type: "decide", sessionID: "s1", requestID: "p1", decision: { type: "approvePlan", mode: "full" } }]);
  });

  it("rejects with the feedback, and not without one", async () => {
    const { el, sent, click, type } = setup("plan", plan);
    await click("[data-testid=reject-plan]");
    expect(el<HTMLButtonElement>("[data-testid=send-plan-feedback]").disabled).toBe(true);
    await type("[data-testid=plan-feedback]", "Also update the docs");
    await click("[data-testid=send-plan-feedback]");
    expect(sent).toEqual([{ type: "decide", sessionID: "s1", requestID: "p1", decision: { type: "deny", message: "Also update the docs" } }]);
  });

  it("cannot approve an empty plan", () => {
    const { el } = setup("plan", { ...plan, input: {} });
    expect(el<HTMLButtonElement>("[data-testid=approve-plan]").disabled).toBe(true);
  });
});

describe("QuestionCard", () => {
  it("answers every question with its choices or free text", async () => {
    const { root, el, sent, click, type } = setup("questions", questions);
    expect(root.querySelectorAll("[data-testid=question]").length).toBe(2);
    expect(el<HTMLButtonElement>("[data-testid=send-answers]").disabled).toBe(true);
    await click("[data-question='Which color?'] [data-label=Blue]");
    await click("[data-question='Which sizes?'] [data-label=S]");
    await click("[data-question='Which sizes?'] [data-label=M]");
    await type("[data-question='Which sizes?'] [data-testid=other]", " XL ");
    await click("[data-testid=send-answers]");
    expect(sent).toEqual([
      {
        type: "decide",
        sessionID: "s1",
        requestID: "q1",
        decision: {
          type: "answer",
          answers: [
            { question: "Which color?", choices: ["Blue"] },
            { question: "Which sizes?", choices: ["S", "M"], other: "XL" },
          ],
        },
      },
    ]);
  });

  it("keeps one choice for a single-choice question", async () => {
    const { el, click } = setup("questions", questions);
    await click("[data-question='Which color?'] [data-label=Red]");
    await click("[data-question='Which color?'] [data-label=Blue]");
    expect(el<HTMLInputElement>("[data-question='Which color?'] [data-label=Red]").checked).toBe(false);
    expect(el<HTMLInputElement>("[data-question='Which color?'] [data-label=Blue]").checked).toBe(true);
  });
});
