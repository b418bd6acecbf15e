// An independent ACP client for the `nucleic acp` tests (crates/cli/tests/cli/acp.rs), on the
// official TypeScript SDK (pinned in package.json): it starts `nucleic acp` as an editor would
// and plays one scenario, printing what it saw as one JSON line on stdout.
//
//   node peer.mjs first NUCLEIC HOME CWD  new session, a prompt whose tool call asks permission
//                                         (answered with `nucleic session approve`, another
//                                         Nucleic client), a prompt cancelled, then stdin closed
//   node peer.mjs load NUCLEIC HOME CWD SESSION [FROM_SEQ]  session/load, then one more prompt
//   node peer.mjs modes NUCLEIC HOME CWD   new session, its modes switched, a prompt whose
//                                          permission the editor allows (a real agent)
//   node peer.mjs critical NUCLEIC HOME CWD  new session, a prompt whose command the policy's
//                                            invariants forbid: the editor allows whatever is asked
//   node peer.mjs leave NUCLEIC HOME CWD   new session, a prompt; the editor closes while its
//                                          permission is asked, unanswered
//   node peer.mjs answer NUCLEIC HOME CWD SESSION  session/load; the approval still pending is
//                                                  asked again: allowed, its call completes
//   node peer.mjs interactive NUCLEIC HOME CWD PROMPT  new session, a prompt whose plan is
//                                          approved into edit, whose question is answered
//                                          "Blue", anything else allowed, in the editor
//   node peer.mjs forged NUCLEIC HOME CWD PROMPT OPTION  new session, a prompt whose first
//                                          request the editor answers OPTION, offered or not
import { spawn, execFile } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { promisify } from "node:util";
import * as acp from "@agentclientprotocol/sdk";

const [scenario, nucleic, home, cwd, sessionArg, fromSeqArg] = process.argv.slice(2);
const within = (ms, what, promise) =>
  Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)),
  ]);

const child = spawn(nucleic, ["acp", "--agent", process.env.NUCLEIC_ACP_AGENT ?? "sim"], {
  env: { ...process.env, NUCLEIC_HOME: home },
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const report = { updates: [], permissions: [], prompts: [] };
let onUpdate = () => {};
let onPermission = async () => ({ outcome: { outcome: "cancelled" } });

const conn = acp
  .client({ name: "nucleic-acp-peer" })
  .onNotification("session/update", ({ params }) => {
    report.updates.push({
      seq: params._meta?.nucleic?.seq ?? null,
      kind: params.update.sessionUpdate,
      toolCallId: params.update.toolCallId ?? null,
      status: params.update.status ?? null,
      text: params.update.content?.text ?? null,
      mode: params.update.currentModeId ?? null,
      diff: Array.isArray(params.update.content)
        ? params.update.content.some((c) => c.type === "diff")
        : false,
    });
    onUpdate(params);
  })
  .onRequest("session/request_permission", (context) => onPermission(context))
  .connect(stream);
const agent = conn.agent;

const init = await within(30000, "initialize", agent.request("initialize", {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
}));
report.initialize = { protocolVersion: init.protocolVersion, agentCapabilities: init.agentCapabilities };

async function prompt(sessionId, text) {
  const response = await within(60000, `prompt ${text}`, agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text }],
  }));
  report.prompts.push({ text, stopReason: response.stopReason });
  return response;
}

if (scenario === "first") {
  const created = await within(60000, "session/new", agent.request("session/new", { cwd, mcpServers: [] }));
  const sessionId = created.sessionId;
  report.sessionId = sessionId;
  report.modes = created.modes ?? null;

  // The tool call asks: this client waits, and another Nucleic client answers first.
  onPermission = async ({ params, signal }) => {
    const requestID = params._meta?.nucleic?.requestID;
    const seen = { toolCall: params.toolCall, options: params.options.map((o) => o.optionId), requestID };
    report.permissions.push(seen);
    // Rejects unless `nucleic session approve` exits 0.
    await promisify(execFile)(nucleic, ["session", "approve", sessionId, requestID], {
      env: { ...process.env, NUCLEIC_HOME: home },
    });
    seen.approvedElsewhere = true;
    // The agent withdraws its request ($/cancel_request): the editor's prompt goes away.
    await within(30000, "the request withdrawn", new Promise((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    }));
    seen.withdrawn = true;
    throw signal.reason;
  };
  await prompt(sessionId, "run touch acp-ran");

  // The editor answers itself: allow, then deny.
  for (const [text, optionId] of [["run touch editor-allowed", "allow"], ["run touch editor-denied", "deny"]]) {
    onPermission = async ({ params }) => {
      report.permissions.push({ toolCall: params.toolCall, answered: optionId });
      return { outcome: { outcome: "selected", optionId } };
    };
    await prompt(sessionId, text);
  }

  // A long turn, cancelled once it streams.
  let streaming;
  const started = new Promise((resolve) => (streaming = resolve));
  onUpdate = (params) => {
    if (params.update.sessionUpdate === "agent_message_chunk") streaming();
  };
  const long = prompt(sessionId, "stream 2400");
  await within(30000, "the long turn streaming", started);
  await agent.notify("session/cancel", { sessionId });
  await long;
  onUpdate = () => {};
} else if (scenario === "load") {
  const meta = fromSeqArg ? { nucleic: { fromSeq: Number(fromSeqArg) } } : undefined;
  const loaded = await within(60000, "session/load", agent.request("session/load", {
    sessionId: sessionArg,
    cwd,
    mcpServers: [],
    ...(meta ? { _meta: meta } : {}),
  }));
  report.loaded = { modes: loaded?.modes ?? null, updatesBeforeAnswer: report.updates.length };
  await prompt(sessionArg, "say still here");
} else if (scenario === "modes") {
  const created = await within(90000, "session/new", agent.request("session/new", { cwd, mcpServers: [] }));
  const sessionId = created.sessionId;
  report.sessionId = sessionId;
  report.modes = created.modes ?? null;
  for (const modeId of ["readonly", "edit"]) {
    const switched = new Promise((resolve) => {
      onUpdate = (params) => params.update.currentModeId === modeId && resolve();
    });
    await within(30000, `set_mode ${modeId}`, agent.request("session/set_mode", { sessionId, modeId }));
    await within(30000, `the mode update to ${modeId}`, switched);
  }
  onUpdate = () => {};
  onPermission = async ({ params }) => {
    report.permissions.push({ toolCall: params.toolCall, answered: "allow" });
    return { outcome: { outcome: "selected", optionId: "allow" } };
  };
  await prompt(sessionId, "make the file");
} else if (scenario === "critical") {
  const created = await within(60000, "session/new", agent.request("session/new", { cwd, mcpServers: [] }));
  report.sessionId = created.sessionId;
  // Whatever is asked, the editor allows it.
  onPermission = async ({ params }) => {
    report.permissions.push({ toolCall: params.toolCall, risk: params._meta?.nucleic?.risk ?? null });
    return { outcome: { outcome: "selected", optionId: "allow" } };
  };
  await prompt(created.sessionId, "run it");
} else if (scenario === "leave") {
  const created = await within(60000, "session/new", agent.request("session/new", { cwd, mcpServers: [] }));
  report.sessionId = created.sessionId;
  const asked = new Promise((resolve) => {
    onPermission = ({ params }) => {
      report.permissions.push({ toolCall: params.toolCall });
      resolve();
      return new Promise(() => {}); // never answered: the editor goes away
    };
  });
  agent.request("session/prompt", { sessionId: created.sessionId, prompt: [{ type: "text", text: "run touch left-ran" }] })
    .catch(() => {});
  await within(60000, "the permission asked", asked);
} else if (scenario === "answer") {
  const asked = new Promise((resolve) => {
    onPermission = ({ params }) => {
      report.permissions.push({ toolCall: params.toolCall, answered: "allow" });
      resolve(params.toolCall.toolCallId);
      return { outcome: { outcome: "selected", optionId: "allow" } };
    };
  });
  await within(60000, "session/load", agent.request("session/load", { sessionId: sessionArg, cwd, mcpServers: [] }));
  report.loaded = { updatesBeforeAnswer: report.updates.length };
  const call = await within(30000, "the pending approval asked again", asked);
  await within(30000, "the call completed", new Promise((resolve) => {
    const done = () => report.updates.some((u) => u.toolCallId === call && u.status === "completed");
    if (done()) resolve();
    onUpdate = () => done() && resolve();
  }));
} else if (scenario === "interactive") {
  // A plan and a question asked in the editor and answered there: the plan approved into
  // edit, the question with the choice named "Blue", any other request allowed.
  const created = await within(60000, "session/new", agent.request("session/new", { cwd, mcpServers: [] }));
  report.sessionId = created.sessionId;
  onPermission = async ({ params }) => {
    const options = params.options.map((o) => ({ id: o.optionId, name: o.name }));
    const blue = options.find((o) => o.name === "Blue");
    const optionId = params.toolCall.kind === "switch_mode" ? "approve-plan:edit" : blue ? blue.id : "allow";
    report.permissions.push({
      title: params.toolCall.title,
      kind: params.toolCall.kind,
      text: params.toolCall.content?.[0]?.content?.text ?? null,
      options,
      meta: params._meta?.nucleic ?? null,
      answered: optionId,
    });
    return { outcome: { outcome: "selected", optionId } };
  };
  await prompt(report.sessionId, sessionArg);
} else if (scenario === "forged") {
  // The editor answers the first request with OPTION whatever was offered, then leaves.
  const optionId = fromSeqArg;
  const created = await within(60000, "session/new", agent.request("session/new", { cwd, mcpServers: [] }));
  report.sessionId = created.sessionId;
  const answered = new Promise((resolve) => {
    onPermission = async ({ params }) => {
      report.permissions.push({
        kind: params.toolCall.kind,
        options: params.options.map((o) => o.optionId),
        requestID: params._meta?.nucleic?.requestID ?? null,
        answered: optionId,
      });
      setTimeout(resolve, 1500); // time for a decision to land, were one made
      return { outcome: { outcome: "selected", optionId } };
    };
  });
  agent.request("session/prompt", { sessionId: created.sessionId, prompt: [{ type: "text", text: sessionArg }] })
    .catch(() => {});
  await within(60000, "the permission asked", answered);
} else {
  throw new Error(`unknown scenario ${scenario}`);
}

// Closing the editor: stdin closed, `nucleic acp` exits, the session goes on in the daemon.
child.stdin.end();
report.exit = await within(20000, "nucleic acp exiting", exited);
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
