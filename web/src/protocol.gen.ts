// Generated from crates/protocol by ts-rs (crates/protocol/src/typescript.rs). Do not edit:
// run `NUCLEIC_UPDATE_TS=1 cargo test -p nucleic-protocol typescript` after changing a wire type.
/* eslint-disable */

export type JsonValue = number | string | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export const PROTOCOL_VERSION = 1;
export const MAX_FILE_CONTENT_BYTES = 4194304;
export const FEATURE_EVENT_BATCHES = "eventBatches";

export type Event = { seq: number, at: string, sessionID: string, backend: Backend, 
/**
 * The native line's type (`system/init`, `assistant`, `result`, …); absent for events the
 * host makes itself (user input, status changes, the end of a run).
 */
nativeType?: string | null, kind: EventKind, 
/**
 * Where in the agent's output this event came from: `<run>/<stream><offset>.<index>`
 * (`o` stdout or `e` stderr, the byte offset just past its line, its place among that
 * line's events). A restarted host resumes an agent it re-adopts right after the last
 * origin written, so nothing is lost or repeated. Absent for events the host makes and
 * for agents not run by a keeper. Clients may ignore it.
 */
origin?: string | null, };

export type Backend = "claudeCode" | "codex" | "simulated";

export type EventKind = { "type": "userText" } & TextBlock | { "type": "sessionStarted" } & SessionStarted | { "type": "assistantText" } & TextBlock | { "type": "thinking" } & TextBlock | { "type": "toolCallStarted" } & ToolCall | { "type": "toolInputDelta" } & ToolInputDelta | { "type": "toolCallCompleted" } & ToolCall | { "type": "toolResult" } & ToolResult | { "type": "usage" } & Usage | { "type": "turnCompleted" } & TurnCompleted | { "type": "runFinished" } & RunFinished | { "type": "rateLimit" } & RateLimit | { "type": "apiRetry" } & ApiRetry | { "type": "approvalRequested" } & ApprovalRequested | { "type": "approvalResolved" } & ApprovalResolved | { "type": "permissionDenied" } & PermissionDenied | { "type": "statusChanged" } & StatusChanged | { "type": "settingsChanged" } & SettingsChanged | { "type": "interruptRequested" } & InterruptRequested | { "type": "error" } & ErrorEvent | { "type": "stderr" } & StderrLine | { "type": "sessionCreated" } & SessionCreated | { "type": "sessionUpdated" } & SessionUpdated | { "type": "worktreeFinished" } & WorktreeFinished | { "type": "checkStarted" } & CheckStarted | { "type": "checkOutput" } & CheckOutput | { "type": "checkFinished" } & CheckFinished | { "type": "report" } & Report | { "type": "raw" } & Raw;

export type SessionStatus = "idle" | "running" | "awaiting-approval" | "awaiting-input" | "finished" | "error";

export type TextBlock = { isPartial: boolean, messageID: string, text: string, };

export type SessionStarted = { 
/**
 * The backend's own session id (what `--resume` takes).
 */
backendSessionID: string, cwd: string, model: string, toolNames: Array<string>, permissionMode?: string | null, agentVersion?: string | null, };

export type ToolCall = { toolCallID: string, name: string, input: JsonValue, 
/**
 * Set when a sub-agent (e.g. `Task`/`Agent`) made the call.
 */
parentToolCallID?: string | null, };

export type ToolInputDelta = { toolCallID: string, partialJson: string, };

export type ToolResult = { toolCallID: string, content: JsonValue, isError: boolean, };

export type Usage = { inputTokens: number, outputTokens: number, cachedInputTokens: number, costUSD?: number | null, };

export type TurnCompleted = { stopReason?: string | null, usage: Usage, 
/**
 * True when the turn failed (Claude reports API errors as `subtype: success` +
 * `is_error: true`; this flag is the truth).
 */
isError?: boolean, 
/**
 * Why the turn ended (`completed`, `api_error`, `aborted_streaming`, `max_turns`, …).
 */
terminalReason?: string | null, 
/**
 * The final answer text, or the error text for a failed turn.
 */
result?: string | null, durationMs?: number | null, };

export type RunFinished = { outcome: RunOutcome, 
/**
 * One line a person can read: why the run ended this way.
 */
message?: string | null, exitCode?: number | null, 
/**
 * Native lines of this run the decoder did not recognise (each kept as a `raw` event).
 */
unknownLines?: number, };

export type RunOutcome = "completed" | "interrupted" | "stopped" | "apiError" | "limitReached" | "agentError" | "crashed" | "spawnFailed";

export type RateLimit = { status: string, rateLimitType?: string | null, resetsAt?: string | null, isUsingOverage?: boolean | null, overageStatus?: string | null, };

export type ApiRetry = { attempt: number, maxRetries: number, retryDelayMs: number, httpStatus?: number | null, 
/**
 * The backend's error class (`server_error`, `rate_limit`, `overloaded`, …).
 */
error: string, };

export type PermissionDenied = { toolName: string, toolCallID?: string | null, message: string, };

export type StatusChanged = { status: SessionStatus, previous: SessionStatus, };

export type SettingsChanged = { model?: string | null, permissionMode?: string | null, };

export type InterruptRequested = { by: string, };

export type ErrorEvent = { code: ErrorCode, message: string, httpStatus?: number | null, };

export type ErrorCode = "apiError" | "decode" | "protocol" | "invalidInput" | "spawn" | "agentExited" | "host" | "timeout";

export type StderrLine = { text: string, };

export type Raw = { native: unknown, };

export type SessionCreated = { title: string, projectID?: string | null, projectRoot?: string | null, 
/**
 * Where the agent runs: a worktree, or the directory `nucleic run` was given.
 */
cwd: string, worktree?: WorktreeInfo | null, model?: string | null, permissionMode?: string | null, 
/**
 * An imported session: events only, no agent.
 */
readOnly?: boolean, 
/**
 * The session this one continues (keep → continue), if any.
 */
continuesSessionID?: string | null, 
/**
 * Who asked for the session (a client's name).
 */
createdBy?: string | null, };

export type WorktreeInfo = { path: string, branch: string, baseRef: string, baseSHA: string, };

export type SessionUpdated = { title?: string | null, archived?: boolean | null, 
/**
 * Who made the change.
 */
by: string, };

export type WorktreeFinished = { action: WorktreeAction, 
/**
 * For merge / squash / rebase: the branch that moved and its new tip.
 */
baseBranch?: string | null, newTip?: string | null, 
/**
 * For continue: the new session.
 */
continuedIn?: string | null, by: string, 
/**
 * Merged although required checks failed: the reason given (and which failed).
 */
forcedReason?: string | null, };

export type WorktreeAction = "merged" | "squashed" | "rebased" | "discarded" | "kept" | "rolledBack" | "continued";

export type CheckSpec = { 
/**
 * Unique within the project (`tests`, `lint`, `build`).
 */
name: string, 
/**
 * Program and arguments, run without a shell.
 */
argv: Array<string>, 
/**
 * Killed (its whole process tree) after this many seconds.
 */
timeoutSecs: number, 
/**
 * Host environment variables passed on, besides PATH, HOME and the locale; never
 * `NUCLEIC_*`.
 */
env?: Array<string>, 
/**
 * A failing required check refuses merge / squash / rebase (unless forced with a reason).
 */
required: boolean, };

export type CheckStarted = { name: string, argv: Array<string>, 
/**
 * `turn` (after a turn), `request` (someone asked) or `finish` (the merge gate).
 */
trigger: CheckTrigger, };

export type CheckTrigger = "turn" | "request" | "finish";

export type CheckOutput = { name: string, text: string, };

export type CheckOutcome = "passed" | "failed" | "timedOut" | "stopped" | "error";

export type CheckFinished = { name: string, outcome: CheckOutcome, exitCode?: number | null, durationMs: number, 
/**
 * Test counts parsed from the output (absent when no known runner's lines were seen).
 */
passed?: number | null, failed?: number | null, skipped?: number | null, 
/**
 * Whose lines the counts came from (`cargo`, `pytest`, `plain`, …).
 */
runner?: string | null, timedOut?: boolean, 
/**
 * The counts and the exit code disagreed; this says how (the counts won).
 */
flag?: string | null, 
/**
 * Why it could not run, for `error`.
 */
error?: string | null, 
/**
 * The full output (0600), up to its cap.
 */
logPath?: string | null, outputBytes: number, 
/**
 * Bytes of the output kept in the log (less than `outputBytes` when capped).
 */
logBytes: number, 
/**
 * Processes it left running that were killed when it ended.
 */
leftoversKilled?: number, required: boolean, };

export type Report = { 
/**
 * `turn` (after a turn) or `request`.
 */
trigger: CheckTrigger, 
/**
 * Paths the task (the last prompt) named, if it named any.
 */
taskPaths?: Array<string>, 
/**
 * Files changed vs the base (uncommitted and untracked work included).
 */
files: Array<string>, 
/**
 * Changed files outside the paths the task named.
 */
outsideTask?: Array<string>, additions: number, deletions: number, ahead: number, behind: number, 
/**
 * The latest result of each check since the last prompt.
 */
checks: Array<CheckFinished>, approvalsAsked: number, approvalsDenied: number, costUSD: number, 
/**
 * What the agent said it did, quoted from its last turn.
 */
claims: Array<ReportClaim>, 
/**
 * Claims the facts contradict.
 */
contradictions: Array<Contradiction>, };

export type ReportClaim = { 
/**
 * `testsPass`, `fixed` or `filesChanged`.
 */
kind: string, 
/**
 * The sentence it came from.
 */
quote: string, };

export type Contradiction = { 
/**
 * The agent's words.
 */
claim: string, 
/**
 * What the host found.
 */
fact: string, };

export type ApprovalRequested = { 
/**
 * The id decisions must quote; unique within the session.
 */
requestID: string, toolCallID?: string | null, toolName: string, input: JsonValue, description?: string | null, 
/**
 * The path outside the allowed set that triggered the ask, if the agent said.
 */
blockedPath?: string | null, 
/**
 * How much harm the call could do, as the host's policy classified it (absent when the
 * host has no policy, e.g. `nucleic run`, or in transcripts written before it had one).
 */
risk?: Risk | null, 
/**
 * What makes it risky ("network", "deletes 2 files", …), most serious first.
 */
riskReasons?: Array<string>, };

export type ApprovalResolved = { requestID: string, decision: DecisionKind, 
/**
 * Who answered: a client/device name, `policy:<rule>`, or `host` for cancellations.
 */
by: string, 
/**
 * The input that will run, when the person edited it.
 */
updatedInput?: JsonValue | null, 
/**
 * The reason given to the model on a deny, why the host cancelled, or the rules an
 * "always" in a scope kept.
 */
message?: string | null, };

export type DecisionKind = "allow" | "allowEdited" | "allowAlways" | "deny" | "denyAndStop" | "cancelled";

export type Decision = { "type": "allow" } | { "type": "allowEdited", updatedInput: JsonValue, } | { "type": "allowAlways", scope?: RuleScope | null, } | { "type": "deny", message: string, } | { "type": "denyAndStop", message: string, };

export type Risk = "low" | "medium" | "high" | "critical";

export type RuleScope = "session" | "project" | "host";

export type ClientMessage = { "type": "hello", clientID: string, clientName: string, protocolVersion: number, 
/**
 * Optional behaviours the client understands (e.g. [`FEATURE_EVENT_BATCHES`]).
 */
features?: Array<string>, 
/**
 * A signed-in device's proof of its key; required unless the connection carries the
 * host's token.
 */
device?: DeviceProof | null, } | { "type": "listProjects", messageID: string, } | { "type": "listSessions", messageID: string, projectID?: string | null, includeArchived: boolean, } | { "type": "subscribe", messageID: string, sessionID: string, fromSeq: number, verbosity: Verbosity, } | { "type": "unsubscribe", messageID: string, sessionID: string, } | { "type": "gitFacts", messageID: string, sessionID: string, 
/**
 * Include the unified patch text (file list and counts always come).
 */
includePatch: boolean, } | { "type": "exportSession", messageID: string, sessionID: string, format: ExportFormat, } | { "type": "sendInput", messageID: string, sessionID: string, text: string, } | { "type": "decide", messageID: string, sessionID: string, requestID: string, decision: Decision, 
/**
 * The person confirmed a second time: required to allow a `critical` request (without
 * it such a decision is refused and the request stays pending).
 */
confirmed?: boolean, } | { "type": "intent", messageID: string, intent: Intent, } | { "type": "listFiles", messageID: string, sessionID: string, path: string, recursive: boolean, } | { "type": "readFile", messageID: string, sessionID: string, path: string, } | { "type": "listBranches", messageID: string, projectID: string, } | { "type": "listDevices", messageID: string, };

export type Verbosity = "full" | "noPartials" | "summary";

export type Intent = { "kind": "addProject", path: string, name?: string | null, setupScript?: string | null, copyFiles: Array<string>, defaultBackend?: Backend | null, 
/**
 * Commands the host runs itself (tests, lint, build); see `docs/dev-loop.md`.
 */
checks?: Array<CheckSpec>, 
/**
 * Run the checks after every turn (and report).
 */
checksAfterTurn?: boolean, 
/**
 * Worktrees kept prepared for new sessions (the host's default when absent; 0: none).
 */
poolSize?: number | null, } | { "kind": "setPoolSize", projectID: string, size: number, } | { "kind": "setProjectChecks", projectID: string, checks: Array<CheckSpec>, checksAfterTurn?: boolean | null, } | { "kind": "runChecks", sessionID: string, name?: string | null, } | { "kind": "report", sessionID: string, } | { "kind": "renameProject", projectID: string, name: string, } | { "kind": "removeProject", projectID: string, } | { "kind": "newSession" } & NewSession | { "kind": "interrupt", sessionID: string, } | { "kind": "stop", sessionID: string, } | { "kind": "setModel", sessionID: string, model: string, } | { "kind": "setPermissionMode", sessionID: string, mode: string, } | { "kind": "rename", sessionID: string, title: string, } | { "kind": "archive", sessionID: string, archived: boolean, } | { "kind": "finish", sessionID: string, action: FinishAction, } | { "kind": "import", path: string, } | { "kind": "gc", apply: boolean, } | { "kind": "revokeDevice", deviceID: string, } | { "kind": "rotateToken" } | { "kind": "pairDevice", 
/**
 * The name the paired device is recorded under (default: "paired device").
 */
name?: string | null, 
/**
 * A shorter life than the default 600 s (capped at 600).
 */
ttlSecs?: number | null, };

export type ExportFormat = "markdown" | "jsonl";

export type NewSession = { projectID: string, 
/**
 * Branch or commit to start from (default: the project's default branch).
 */
baseRef?: string | null, backend?: Backend | null, model?: string | null, permissionMode?: string | null, title?: string | null, prompt: string, };

export type FinishAction = { "action": "merge", message?: string | null, 
/**
 * Allow updating the files of a (clean) checkout that has the base branch checked
 * out; without it such a merge is refused and no checkout changes.
 */
updateCheckout?: boolean, 
/**
 * Integrate although required checks fail; the reason is recorded.
 */
forceReason?: string | null, } | { "action": "squash", message?: string | null, 
/**
 * Allow updating the files of a (clean) checkout that has the base branch checked
 * out; without it such a merge is refused and no checkout changes.
 */
updateCheckout?: boolean, 
/**
 * Integrate although required checks fail; the reason is recorded.
 */
forceReason?: string | null, } | { "action": "rebase", message?: string | null, 
/**
 * Allow updating the files of a (clean) checkout that has the base branch checked
 * out; without it such a merge is refused and no checkout changes.
 */
updateCheckout?: boolean, 
/**
 * Integrate although required checks fail; the reason is recorded.
 */
forceReason?: string | null, } | { "action": "discard" } | { "action": "keep" } | { "action": "rollback", confirm: boolean, } | { "action": "continue", prompt: string, } | { "action": "handoff" };

export type HostMessage = { "type": "welcome", hostVersion: string, protocolVersion: number, 
/**
 * The backends this host offers and what each can do.
 */
backends: Array<BackendInfo>, } | { "type": "ack", messageID: string, result?: JsonValue | null, } | { "type": "projects", messageID: string, projects: Array<ProjectSummary>, } | { "type": "sessions", messageID: string, sessions: Array<SessionSummary>, } | { "type": "gitFacts", messageID: string, facts: GitFacts, } | { "type": "files", messageID: string, path: string, entries: Array<FileEntry>, 
/**
 * More entries existed than `MAX_FILE_ENTRIES`.
 */
truncated: boolean, } | { "type": "branches", messageID: string, branches: Array<string>, defaultBranch: string, } | { "type": "devices", messageID: string, devices: Array<DeviceSummary>, } | { "type": "fileContent", messageID: string, file: FileContent, } | { "type": "event", event: Event, } | { "type": "events", sessionID: string, events: Array<Event>, } | { "type": "sessionChanged", session: SessionSummary, } | { "type": "error", messageID?: string | null, code: ProtocolErrorCode, message: string, 
/**
 * For `alreadyResolved`: who answered first.
 */
resolvedBy?: string | null, } | { "type": "unsupported", messageID?: string | null, messageType: string, };

export type ProtocolErrorCode = "badMessage" | "tooLarge" | "badHandshake" | "unauthorized" | "notFound" | "alreadyResolved" | "badCursor" | "unsupported" | "gitRefused" | "limitReached" | "invalidRequest" | "internal";

export type DeviceProof = { deviceID: string, 
/**
 * A challenge from `POST /api/challenge`: single use, valid for a minute.
 */
nonce: string, 
/**
 * base64url (no padding) of the P1363 signature over [`hello_proof_message`].
 */
signature: string, };

export type DeviceSummary = { deviceID: string, name: string, 
/**
 * Unix milliseconds.
 */
pairedAt: number, lastSeenAt?: number | null, revokedAt?: number | null, 
/**
 * This is the device asking.
 */
current: boolean, };

export type ProjectSummary = { projectID: string, name: string, root: string, defaultBranch: string, defaultBackend: Backend, checks?: Array<CheckSpec>, checksAfterTurn?: boolean, 
/**
 * The project's warm worktree pool, when the host runs pools.
 */
pool?: PoolSummary | null, };

export type PoolSummary = { 
/**
 * How many it keeps ready (the project's setting).
 */
size: number, 
/**
 * How many are ready now.
 */
ready: number, 
/**
 * What the ready ones take on disk.
 */
diskBytes: number, 
/**
 * Why it stopped filling (a failing setup script, a full disk, a missing base branch).
 */
error?: string | null, };

export type SessionSummary = { sessionID: string, projectID?: string | null, title: string, backend: Backend, status: SessionStatus, pendingApprovals: number, costUSD: number, lastSeq: number, 
/**
 * Unix milliseconds of the last event.
 */
updatedAt: number, worktree?: WorktreeInfo | null, outcome?: RunOutcome | null, archived: boolean, readOnly: boolean, };

export type GitFacts = { baseBranch: string, baseSHA: string, 
/**
 * Changed files vs the base commit, uncommitted and untracked work included.
 */
files: Array<DiffFile>, patch?: string | null, 
/**
 * Commits on the session branch the base branch lacks, and the reverse.
 */
ahead: number, behind: number, 
/**
 * Files that would conflict merging into the base branch's current tip.
 */
conflicts: Array<string>, };

export type DiffFile = { path: string, oldPath?: string | null, 
/**
 * `added`, `untracked`, `modified`, `deleted`, `renamed`, `copied`, `typeChanged`.
 */
status: string, additions: number, deletions: number, binary: boolean, };

export type Capabilities = { 
/**
 * Gated tool calls are asked interactively (not just allowed/denied by flags).
 */
interactiveApprovals: boolean, 
/**
 * An approval may carry edited tool input.
 */
editedToolInput: boolean, 
/**
 * "Always allow this tool in this session".
 */
allowAlways: boolean, 
/**
 * A deny can also stop the turn.
 */
denyAndStop: boolean, 
/**
 * The current turn can be interrupted without killing the process.
 */
interrupt: boolean, 
/**
 * The model can change mid-session.
 */
setModel: boolean, 
/**
 * The permission mode can change mid-session.
 */
setPermissionMode: boolean, 
/**
 * An earlier conversation can be resumed.
 */
resume: boolean, 
/**
 * A resumed conversation can be forked into a new one.
 */
fork: boolean, 
/**
 * Text streams as partial deltas.
 */
partialDeltas: boolean, };

export type BackendInfo = { backend: Backend, 
/**
 * The backend's executable was found; sessions can be created with it.
 */
available: boolean, capabilities: Capabilities, 
/**
 * Models a picker can suggest (free text is allowed too).
 */
models: Array<string>, 
/**
 * Permission modes this backend accepts, the default first.
 */
permissionModes: Array<string>, };

export type FileKind = "file" | "dir" | "symlink";

export type FileEntry = { 
/**
 * Relative to the worktree root, `/`-separated.
 */
path: string, kind: FileKind, 
/**
 * Bytes (0 for directories).
 */
size: number, };

export type FileEncoding = "utf8" | "base64";

export type FileContent = { path: string, 
/**
 * The whole file's size in bytes.
 */
size: number, 
/**
 * A MIME type guessed from the name (`text/plain`, `image/png`, …).
 */
mime: string, encoding: FileEncoding, content: string, 
/**
 * Only the first `MAX_FILE_CONTENT_BYTES` are here.
 */
truncated: boolean, };
