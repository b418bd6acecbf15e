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

export type Backend = "claudeCode" | "codex" | "simulated" | "gemini" | "openCode" | "qwen";

export type EventKind = { "type": "userText" } & TextBlock | { "type": "sessionStarted" } & SessionStarted | { "type": "assistantText" } & TextBlock | { "type": "thinking" } & TextBlock | { "type": "toolCallStarted" } & ToolCall | { "type": "toolInputDelta" } & ToolInputDelta | { "type": "toolCallCompleted" } & ToolCall | { "type": "toolResult" } & ToolResult | { "type": "usage" } & Usage | { "type": "turnCompleted" } & TurnCompleted | { "type": "runFinished" } & RunFinished | { "type": "rateLimit" } & RateLimit | { "type": "apiRetry" } & ApiRetry | { "type": "approvalRequested" } & ApprovalRequested | { "type": "approvalResolved" } & ApprovalResolved | { "type": "permissionDenied" } & PermissionDenied | { "type": "confinement" } & Confinement | { "type": "egressRefused" } & EgressRefused | { "type": "statusChanged" } & StatusChanged | { "type": "settingsChanged" } & SettingsChanged | { "type": "interruptRequested" } & InterruptRequested | { "type": "error" } & ErrorEvent | { "type": "stderr" } & StderrLine | { "type": "sessionCreated" } & SessionCreated | { "type": "sessionUpdated" } & SessionUpdated | { "type": "worktreeFinished" } & WorktreeFinished | { "type": "worktreeReclaimed" } & WorktreeReclaimed | { "type": "worktreeRestored" } & WorktreeRestored | { "type": "checkStarted" } & CheckStarted | { "type": "checkOutput" } & CheckOutput | { "type": "checkFinished" } & CheckFinished | { "type": "report" } & Report | { "type": "pullRequestOpened" } & PullRequestOpened | { "type": "reviewSent" } & ReviewSent | { "type": "raw" } & Raw;

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

export type Confinement = { 
/**
 * The kernel confines it (bubblewrap: secrets hidden, writes only where allowed, egress
 * only through the host's proxy, no privilege).
 */
confined: boolean, 
/**
 * In words: what holds, or why nothing does.
 */
summary: string, 
/**
 * The destinations its egress proxy allows (`host:port`, `*.domain`).
 */
egressAllowed?: Array<string>, };

export type EgressRefused = { host: string, port: number, 
/**
 * `CONNECT`, or the plain-HTTP request's method.
 */
method: string, reason: string, };

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
createdBy?: string | null, 
/**
 * The session whose agent started this one (through an MCP grant bound to it): the
 * session's parent, whose requests (and its ancestors') this session's MCP grants may
 * never answer.
 */
parentSessionID?: string | null, 
/**
 * The policy mode the session starts in (none without a policy).
 */
mode?: string | null, };

export type WorktreeInfo = { path: string, branch: string, baseRef: string, baseSHA: string, };

export type SessionUpdated = { title?: string | null, archived?: boolean | null, 
/**
 * The session's new policy mode.
 */
mode?: string | null, 
/**
 * What the change means for the agent (e.g. from when it applies).
 */
note?: string | null, 
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

export type WorktreeReclaimed = { 
/**
 * What the directory took (build output included).
 */
bytes: number, 
/**
 * Of which build output (`target/`, `node_modules/`, …), which is not kept.
 */
buildBytes: number, 
/**
 * Uncommitted work was kept (as a commit under `refs/nucleic/reclaimed/`) to come back
 * with the worktree.
 */
keptUncommitted: boolean, 
/**
 * Why: `age` (finished longer ago than the project allows), `budget` (the project's
 * worktrees over its budget) or `request` (a person asked).
 */
reason: string, by: string, };

export type WorktreeRestored = { path: string, 
/**
 * The uncommitted work kept when it was reclaimed is back (uncommitted again).
 */
restoredUncommitted: boolean, by: string, };

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

export type PullRequestOpened = { 
/**
 * The pull request's page.
 */
url: string, number: number, 
/**
 * `open` or `draft` when it was opened.
 */
state: string, title: string, 
/**
 * `[HOST/]OWNER/REPO` it was opened in.
 */
repo: string, 
/**
 * The pushed branch.
 */
head: string, 
/**
 * The branch it asks to merge into.
 */
base: string, 
/**
 * The commit pushed.
 */
headSha: string, 
/**
 * The remote's name and URL the branch was pushed to.
 */
remote: string, remoteURL: string, by: string, 
/**
 * Opened although required checks failed: the reason given (and which failed).
 */
forcedReason?: string | null, };

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
message?: string | null, 
/**
 * An approved plan: the mode the session executes it in (switched before the agent went on).
 */
mode?: SessionMode | null, };

export type EgressAsked = { 
/**
 * The name asked about (lower case).
 */
host: string, port: number, 
/**
 * The request's method (`CONNECT` for HTTPS, else the plain HTTP method).
 */
method: string, };

export type DecisionKind = "allow" | "allowEdited" | "allowAlways" | "deny" | "denyAndStop" | "cancelled" | "approvePlan" | "answered";

export type Decision = { "type": "allow" } | { "type": "allowEdited", updatedInput: JsonValue, } | { "type": "allowAlways", scope?: RuleScope | null, } | { "type": "deny", message: string, } | { "type": "denyAndStop", message: string, } | { "type": "approvePlan", mode: SessionMode, } | { "type": "answer", answers: Array<QuestionAnswer>, };

export type Risk = "low" | "medium" | "high" | "critical";

export type RuleScope = "session" | "project" | "host";

export type SessionMode = "readonly" | "edit" | "full";

export type QuestionAnswer = { 
/**
 * The question's text, exactly as asked.
 */
question: string, 
/**
 * The labels of the chosen options (at most one unless the question is multi-select).
 */
choices?: Array<string>, 
/**
 * Free text instead of (or besides) the options: the "Other" answer.
 */
other?: string | null, };

export type ClientMessage = { "type": "hello", clientID: string, clientName: string, protocolVersion: number, 
/**
 * Optional behaviours the client understands (e.g. [`FEATURE_EVENT_BATCHES`]).
 */
features?: Array<string>, 
/**
 * A signed-in device's proof of its key; required unless the connection carries the
 * host's token.
 */
device?: DeviceProof | null, 
/**
 * The person this connection acts for, recorded as who acted (`by`) instead of the
 * token: a chat bridge's paired user (`telegram:<user>`, `matrix:@user:server`). Only
 * a connection carrying the host's token may name one ([`on_behalf_of_refused`]).
 */
onBehalfOf?: string | null, } | { "type": "listProjects", messageID: string, } | { "type": "listSessions", messageID: string, projectID?: string | null, includeArchived: boolean, } | { "type": "subscribe", messageID: string, sessionID: string, fromSeq: number, verbosity: Verbosity, } | { "type": "unsubscribe", messageID: string, sessionID: string, } | { "type": "gitFacts", messageID: string, sessionID: string, 
/**
 * Include the unified patch text (file list and counts always come).
 */
includePatch: boolean, 
/**
 * Only what this turn changed (its start snapshot to its end snapshot, or to the
 * worktree now while it runs); absent: the whole session vs its base.
 */
turn?: number | null, } | { "type": "exportSession", messageID: string, sessionID: string, format: ExportFormat, } | { "type": "sendInput", messageID: string, sessionID: string, text: string, } | { "type": "decide", messageID: string, sessionID: string, requestID: string, decision: Decision, 
/**
 * The person confirmed a second time: required to allow a `critical` request (without
 * it such a decision is refused and the request stays pending).
 */
confirmed?: boolean, } | { "type": "intent", messageID: string, intent: Intent, } | { "type": "listFiles", messageID: string, sessionID: string, path: string, recursive: boolean, } | { "type": "readFile", messageID: string, sessionID: string, path: string, } | { "type": "listBranches", messageID: string, projectID: string, } | { "type": "listDevices", messageID: string, } | { "type": "getPush", messageID: string, } | { "type": "setPush", messageID: string, subscription: WebPushSubscription | null, quietHours: QuietHours | null, };

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
poolSize?: number | null, } | { "kind": "setPoolSize", projectID: string, size: number, } | { "kind": "setProjectChecks", projectID: string, checks: Array<CheckSpec>, checksAfterTurn?: boolean | null, } | { "kind": "runChecks", sessionID: string, name?: string | null, } | { "kind": "report", sessionID: string, } | { "kind": "addReviewComment", sessionID: string, path: string, line: number, endLine?: number | null, body: string, 
/**
 * The snapshot the diff showed (`gitFacts.snapshot`); absent: the worktree now.
 */
snapshot?: string | null, } | { "kind": "resolveReviewComment", sessionID: string, commentID: string, resolved: boolean, } | { "kind": "reviewComments", sessionID: string, } | { "kind": "sendReview", sessionID: string, } | { "kind": "renameProject", projectID: string, name: string, } | { "kind": "removeProject", projectID: string, } | { "kind": "newSession" } & NewSession | { "kind": "attach", sessionID: string, name: string, content: string, append?: string | null, } | { "kind": "interrupt", sessionID: string, } | { "kind": "stop", sessionID: string, } | { "kind": "setModel", sessionID: string, model: string, } | { "kind": "setPermissionMode", sessionID: string, mode: string, } | { "kind": "setMode", sessionID: string, mode: string, } | { "kind": "setProjectMode", projectID: string, mode: string | null, } | { "kind": "listRules" } & RulesTarget | { "kind": "addRule", sessionID?: string | null, projectID?: string | null, scope: RuleScope, behaviour: RuleBehaviour, rule: string, } | { "kind": "removeRule", sessionID?: string | null, projectID?: string | null, scope: RuleScope, rule: string, } | { "kind": "rename", sessionID: string, title: string, } | { "kind": "archive", sessionID: string, archived: boolean, } | { "kind": "finish", sessionID: string, action: FinishAction, } | { "kind": "import", path: string, } | { "kind": "outsideSessions", projectID: string, } | { "kind": "adoptSession", projectID: string, 
/**
 * The CLI's own session id (`OutsideSession.id`).
 */
session: string, prompt: string, mode?: string | null, inPlace?: boolean, } | { "kind": "gc", apply: boolean, } | { "kind": "setDiskPolicy", projectID: string, policy: DiskPolicy, } | { "kind": "setProjectSandbox", projectID: string, sandbox: ProjectSandbox, } | { "kind": "measureDisk", sessionID: string, } | { "kind": "reclaim", sessionID: string, } | { "kind": "revokeDevice", deviceID: string, } | { "kind": "rotateToken" } | { "kind": "pairDevice", 
/**
 * The name the paired device is recorded under (default: "paired device").
 */
name?: string | null, 
/**
 * A shorter life than the default 600 s (capped at 600).
 */
ttlSecs?: number | null, } | { "kind": "grantMcp", name: string, scopes: Array<McpScope>, 
/**
 * The session whose agent the MCP client is (it may then never answer that session's
 * or its ancestors' requests).
 */
sessionID?: string | null, 
/**
 * The projects (ids) the grant covers: it sees, starts in and acts on those only.
 * Absent: every project.
 */
projectIDs?: Array<string> | null, } | { "kind": "revokeMcp", name: string, } | { "kind": "listMcpGrants" } | { "kind": "reportChatBridge", report: ChatBridgeReport, } | { "kind": "listChatBridges" } | { "kind": "unpairChatPerson", person: string, };

export type ExportFormat = "markdown" | "jsonl";

export type NewSession = { projectID: string, 
/**
 * Branch or commit to start from (default: the project's default branch).
 */
baseRef?: string | null, backend?: Backend | null, model?: string | null, permissionMode?: string | null, title?: string | null, 
/**
 * The policy mode (`readonly`, `edit`, `full`); the project's default when absent.
 */
mode?: string | null, prompt: string, };

export type RulesTarget = { sessionID?: string | null, projectID?: string | null, };

export type RuleBehaviour = "allow" | "ask" | "deny";

export type RuleSource = "session" | "nucleicProject" | "nucleicHost" | "localSettings" | "projectSettings" | "userSettings" | "policySettings";

export type RuleEntry = { source: RuleSource, behaviour: RuleBehaviour, rule: string, 
/**
 * The file it is in (none for session rules).
 */
path?: string | null, 
/**
 * Nucleic's rules can be removed here; Claude Code's files are shown read-only.
 */
removable: boolean, };

export type RuleList = { rules: Array<RuleEntry>, 
/**
 * Files that could not be read (each named, with why); their rules do not apply.
 */
problems: Array<string>, 
/**
 * The session's current mode, when a session was asked about.
 */
sessionMode?: string | null, 
/**
 * The mode new sessions of the project start in (the project's, else the host's, else
 * `edit`), when a project (or a session's) was asked about.
 */
projectMode?: string | null, };

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
forceReason?: string | null, } | { "action": "pullRequest", 
/**
 * Defaults to the session's title.
 */
title?: string | null, draft?: boolean, 
/**
 * The branch to merge into; defaults to the session's base branch.
 */
base?: string | null, 
/**
 * `[HOST/]OWNER/REPO`; defaults to the one the remote's URL names.
 */
repo?: string | null, 
/**
 * Open it although required checks fail; the reason is recorded.
 */
forceReason?: string | null, } | { "action": "discard" } | { "action": "keep" } | { "action": "rollback", confirm: boolean, } | { "action": "continue", prompt: string, backend?: Backend | null, } | { "action": "handoff" };

export type HostMessage = { "type": "welcome", hostVersion: string, protocolVersion: number, 
/**
 * The backends this host offers and what each can do.
 */
backends: Array<BackendInfo>, 
/**
 * This host's id at its relay, when it has one: how a device paired through the relay
 * knows it, so a page on the host's own address can tell it is the same host.
 */
relayHostID?: string | null, 
/**
 * The host's [`SCHEMA_DIGEST`]; absent from hosts older than it.
 */
schemaDigest?: string | null, } | { "type": "ack", messageID: string, result?: IntentResult | null, } | { "type": "projects", messageID: string, projects: Array<ProjectSummary>, } | { "type": "sessions", messageID: string, sessions: Array<SessionSummary>, } | { "type": "gitFacts", messageID: string, facts: GitFacts, } | { "type": "files", messageID: string, path: string, entries: Array<FileEntry>, 
/**
 * More entries existed than `MAX_FILE_ENTRIES`.
 */
truncated: boolean, } | { "type": "branches", messageID: string, branches: Array<string>, defaultBranch: string, } | { "type": "devices", messageID: string, devices: Array<DeviceSummary>, } | { "type": "push", messageID: string, push: PushSettings, } | { "type": "fileContent", messageID: string, file: FileContent, } | { "type": "event", event: Event, } | { "type": "events", sessionID: string, events: Array<Event>, } | { "type": "sessionChanged", session: SessionSummary, } | { "type": "error", messageID?: string | null, code: ProtocolErrorCode, message: string, 
/**
 * For `alreadyResolved`: who answered first.
 */
resolvedBy?: string | null, } | { "type": "unsupported", messageID?: string | null, messageType: string, };

export type IntentResult = { "kind": "project" } & ProjectSummary | { "kind": "session" } & SessionSummary | { "kind": "outsideSessions" } & OutsideSessions | { "kind": "diskUsage" } & DiskUsage | { "kind": "reclaimed" } & WorktreeReclaimed | { "kind": "checksRun" } & ChecksRun | { "kind": "report" } & Report | { "kind": "reviewComment" } & ReviewComment | { "kind": "reviewComments" } & ReviewComments | { "kind": "reviewSendout" } & ReviewSendout | { "kind": "sessionUpdated" } & SessionUpdated | { "kind": "projectMode" } & ProjectMode | { "kind": "rules" } & RuleList | { "kind": "ruleAdded" } & RuleAdded | { "kind": "ruleRemoved" } & RuleRemoved | { "kind": "handoff" } & Handoff | { "kind": "integrated" } & Integrated | { "kind": "pullRequest" } & PullRequestOpened | { "kind": "gc" } & GcReport | { "kind": "tokenRotated" } & TokenRotated | { "kind": "pairing" } & Pairing | { "kind": "approval" } & ApprovalResolved | { "kind": "exported" } & ExportedText | { "kind": "attached" } & Attached | { "kind": "mcpGranted" } & McpGranted | { "kind": "mcpGrants" } & McpGrants | { "kind": "chatBridges" } & ChatBridges | { "kind": "chatBridgeReported" } & ChatBridgeReported;

export type OutsideSessions = { sessions: Array<OutsideSession>, 
/**
 * Session files looked at (of every project, for Codex).
 */
examined: number, 
/**
 * Files of the project's folders that were not sessions, and why (at most 20).
 */
skipped: Array<SkippedSessionFile>, 
/**
 * Why the search stopped early (its deadline, its file count), when it did.
 */
truncated?: string | null, };

export type OutsideSession = { backend: Backend, 
/**
 * The CLI's own session id: what `adoptSession` and the CLI's `--resume` take.
 */
id: string, 
/**
 * Its file on the host.
 */
path: string, 
/**
 * The folder it ran in (the checkout or below it), and whether it still exists.
 */
cwd: string, cwdExists: boolean, 
/**
 * Its title, or its first prompt (80 characters at most).
 */
title?: string | null, 
/**
 * Its first and last timestamps, as the CLI wrote them (RFC 3339).
 */
startedAt?: string | null, lastAt?: string | null, 
/**
 * Its turns: exactly when the whole file was read, else at least this many.
 */
turns: number, turnsExact: boolean, model?: string | null, cliVersion?: string | null, 
/**
 * A CLI process holding it now (it can then only be adopted as a fork).
 */
live?: LiveHolder | null, 
/**
 * Lines of a kind this version does not know (a newer CLI), and lines that are not JSON,
 * in what was read.
 */
unknownLines: number, badLines: number, 
/**
 * Whether `adoptSession` can carry it on (its backend can fork the conversation).
 */
adoptable: boolean, };

export type LiveHolder = { pid: number, 
/**
 * `claude` or `codex`.
 */
program: string, 
/**
 * How it was matched to the session (its open file, its command line, its folder).
 */
why: string, };

export type SkippedSessionFile = { path: string, why: string, };

export type ChecksRun = { checks: Array<CheckFinished>, };

export type ReviewComments = { comments: Array<ReviewComment>, };

export type ReviewSendout = { sent: number, prompt: string, };

export type ProjectMode = { projectID: string, mode: string, };

export type RuleAdded = { added: boolean, };

export type RuleRemoved = { removed: number, };

export type Handoff = { command: string, };

export type Integrated = { baseBranch: string, newTip: string, };

export type GcReport = { 
/**
 * Finished sessions' worktrees due for reclaiming (reclaimed, with `apply`).
 */
reclaimableWorktrees: Array<Reclaimable>, 
/**
 * Worktrees no session owns.
 */
orphanWorktrees: Array<string>, 
/**
 * Pooled worktrees the pool does not know.
 */
stalePooledWorktrees: Array<string>, 
/**
 * Keepers no session knows.
 */
strayKeepers: Array<string>, 
/**
 * Session ids whose turn snapshots no worktree owns.
 */
staleTurnSnapshots: Array<string>, 
/**
 * Whether anything was removed (`apply`).
 */
removed: boolean, };

export type Reclaimable = { sessionID: string, path: string | null, bytes: number, buildBytes: number, 
/**
 * `age` or `budget`.
 */
reason: string, 
/**
 * It was reclaimed (`apply`).
 */
reclaimed?: boolean, 
/**
 * Why it was not reclaimed, with `apply`.
 */
error?: string | null, };

export type TokenRotated = { devicesRevoked: number, };

export type Pairing = { link: string, hostID: string, 
/**
 * The host's public key, base64url.
 */
hostKey: string, 
/**
 * The relay's WebSocket base URL.
 */
relay: string, 
/**
 * Direct addresses of the host's LAN listener.
 */
lan: Array<string>, 
/**
 * When the link stops working, in Unix milliseconds.
 */
expiresAt: number, 
/**
 * The link as a QR code (SVG), when one could be drawn.
 */
qrSvg: string | null, };

export type ExportedText = { text: string, };

export type Attached = { name: string, 
/**
 * The absolute path inside the agent's sandbox (the same on the host).
 */
path: string, size: number, };

export type McpScope = "observe" | "start" | "steer" | "approve" | "finish";

export type McpGrantSummary = { name: string, scopes: Array<McpScope>, 
/**
 * The session whose agent the client is: its requests, and its ancestors', are never
 * the principal's to answer; sessions it starts are recorded as that session's children.
 */
sessionID?: string | null, 
/**
 * The projects (ids) it covers; absent: every project. A session of another project is
 * neither listed to it nor acted on by it.
 */
projectIDs?: Array<string> | null, 
/**
 * When it was granted, in Unix milliseconds.
 */
grantedAt: number, 
/**
 * When it was revoked, in Unix milliseconds (a revoked name is never granted again).
 */
revokedAt?: number | null, };

export type McpGranted = { grant: McpGrantSummary, credential: string, };

export type McpGrants = { grants: Array<McpGrantSummary>, };

export type ChatBridgeState = "running" | "retrying" | "refused";

export type ChatPerson = { 
/**
 * Who they act as (`telegram:42`, `matrix:@alice:example.org`): `hello.onBehalfOf`.
 */
person: string, 
/**
 * The chat they paired from.
 */
chat: string, 
/**
 * When they paired, in Unix milliseconds.
 */
pairedAt: number, };

export type ChatBridgeReport = { 
/**
 * The bridge (`telegram:<bot id>`, `matrix:@bot:example.org`).
 */
bridge: string, state: ChatBridgeState, 
/**
 * The last failure, in words (never a token).
 */
lastError?: string | null, 
/**
 * Every user paired with it now.
 */
paired: Array<ChatPerson>, 
/**
 * Messages from people who are not paired, ignored so far.
 */
strangersIgnored: number, 
/**
 * Messages to chats not sent yet.
 */
outboxQueued: number, };

export type ChatBridgeSummary = { bridge: string, state: ChatBridgeState, lastError?: string | null, 
/**
 * Its paired users, less those the person unpaired.
 */
paired: Array<ChatPerson>, strangersIgnored: number, outboxQueued: number, 
/**
 * When it last reported, in Unix milliseconds.
 */
reportedAt: number, 
/**
 * Whether it has been silent for longer than it reports (it stopped, or lost the host).
 */
silent: boolean, };

export type ChatBridges = { bridges: Array<ChatBridgeSummary>, };

export type ChatBridgeReported = { unpaired: Array<string>, };

export type ProtocolErrorCode = "badMessage" | "tooLarge" | "badHandshake" | "unauthorized" | "forbidden" | "notFound" | "alreadyResolved" | "badCursor" | "unsupported" | "gitRefused" | "limitReached" | "invalidRequest" | "internal";

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

export type WebPushSubscription = { 
/**
 * The push service URL messages are posted to.
 */
endpoint: string, keys: WebPushKeys, };

export type WebPushKeys = { 
/**
 * The browser's P-256 public key (65 bytes uncompressed).
 */
p256dh: string, 
/**
 * The 16-byte authentication secret.
 */
auth: string, };

export type QuietHours = { 
/**
 * Minutes after local midnight, 0–1439.
 */
fromMinute: number, 
/**
 * Minutes after local midnight, 0–1439 (exclusive).
 */
toMinute: number, 
/**
 * The device's IANA time zone (`Europe/Berlin`, as
 * `Intl.DateTimeFormat().resolvedOptions().timeZone` gives it); the host refuses one its
 * time zone database does not know.
 */
timeZone: string, };

export type PushSettings = { 
/**
 * The host's VAPID public key: the browser's `applicationServerKey` (base64url).
 */
vapidPublicKey: string, 
/**
 * This device has a subscription on the host.
 */
subscribed: boolean, quietHours?: QuietHours | null, };

export type ProjectSummary = { projectID: string, name: string, root: string, defaultBranch: string, defaultBackend: Backend, checks?: Array<CheckSpec>, checksAfterTurn?: boolean, 
/**
 * The project's warm worktree pool, when the host runs pools.
 */
pool?: PoolSummary | null, 
/**
 * Its worktree budget and reclaim age.
 */
diskPolicy?: DiskPolicy, 
/**
 * What its agents see beyond the default confinement.
 */
sandbox?: ProjectSandbox, };

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
updatedAt: number, worktree?: WorktreeInfo | null, outcome?: RunOutcome | null, archived: boolean, readOnly: boolean, 
/**
 * What the session's worktree takes on disk, when the host last measured it.
 */
disk?: DiskUsage | null, 
/**
 * The worktree's directory was reclaimed to free disk; it comes back on continue.
 */
worktreeReclaimed?: boolean, 
/**
 * The session's policy mode (`readonly`, `edit`, `full`); none without a policy.
 */
mode?: string | null, };

export type DiskUsage = { bytes: number, 
/**
 * Of which build output and caches (`target/`, `node_modules/`, virtualenvs, any
 * directory with a `CACHEDIR.TAG`).
 */
buildBytes: number, 
/**
 * Unix milliseconds.
 */
measuredAt: number, };

export type DiskPolicy = { 
/**
 * Finished sessions' worktrees are reclaimed, oldest first, while the project's worktrees
 * take more than this.
 */
budgetBytes?: number | null, 
/**
 * Finished sessions' worktrees are reclaimed this long after their last event.
 */
reclaimAfterSecs?: number | null, };

export type ProjectSandbox = { 
/**
 * Absolute paths the agent sees read-only (a toolchain under a hidden home, say).
 */
readOnly?: Array<string>, 
/**
 * Absolute paths the agent may write (a cache the project's builds share).
 */
writable?: Array<string>, 
/**
 * Absolute paths hidden from the agent on top of the defaults.
 */
hide?: Array<string>, 
/**
 * Destinations its egress proxy allows besides the model's (`host`, `host:port`,
 * `*.domain`).
 */
allowDomains?: Array<string>, };

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
conflicts: Array<string>, 
/**
 * The turn whose change `files` and `patch` are (absent: the whole session).
 */
turn?: number | null, 
/**
 * The turns with snapshots, oldest first.
 */
turns?: Array<TurnSnapshot>, 
/**
 * The worktree snapshot (a git tree id) `files` and `patch` end at: what review comments
 * made on this diff are anchored to.
 */
snapshot?: string | null, };

export type DiffFile = { path: string, oldPath?: string | null, 
/**
 * `added`, `untracked`, `modified`, `deleted`, `renamed`, `copied`, `typeChanged`.
 */
status: string, additions: number, deletions: number, binary: boolean, };

export type TurnSnapshot = { 
/**
 * 1 for the first prompt, 2 for the first follow-up, …
 */
turn: number, 
/**
 * Unix milliseconds of the start snapshot (the prompt was sent).
 */
startedAt: number, 
/**
 * Unix milliseconds of the end snapshot; absent while the turn runs.
 */
endedAt?: number | null, };

export type ReviewComment = { commentID: string, 
/**
 * The file, relative to the worktree.
 */
path: string, 
/**
 * First line commented on (1-based, in the file as it was at `snapshot`).
 */
line: number, 
/**
 * Last line of a range (absent: one line).
 */
endLine?: number | null, body: string, 
/**
 * The lines commented on, as they were at `snapshot` (quoted to the agent).
 */
quote: Array<string>, 
/**
 * The worktree snapshot (a git tree id) the comment was made on.
 */
snapshot: string, status: CommentStatus, 
/**
 * The commented lines are no longer what `quote` says in the worktree now.
 */
outdated?: boolean, 
/**
 * Unix milliseconds.
 */
createdAt: number, createdBy: string, 
/**
 * When it was sent to the agent (`sendReview`), Unix milliseconds.
 */
sentAt?: number | null, };

export type CommentStatus = "open" | "resolved";

export type ReviewSent = { comments: Array<ReviewComment>, 
/**
 * Who sent it.
 */
by: string, };

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
