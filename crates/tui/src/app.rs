//! The cockpit's state, fed by what the host says (summaries, events, replies) and changed by
//! keys (`keys`): pure, no I/O. What it wants done goes out as [`Command`]s for the client
//! loop; what comes back arrives as [`Reply`]s.

use std::collections::{HashMap, HashSet};

use nucleic_protocol::{
    BackendInfo, Decision, Event, EventKind, GitFacts, HostMessage, ProjectSummary, ReviewComment,
    SessionStatus, SessionSummary,
};

use crate::asking::{Answering, MAX_OPTIONS, PlanReview};
use crate::diff::Diff;
use crate::highlight::Colours;
use crate::reviewing::{CommentDraft, ModelChoice};
use crate::transcript::{Tone, Transcript, decision_words};

/// Which screen is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    Sessions,
    Inbox,
    /// One session's transcript.
    Session(String),
    /// One session's diff against its base.
    Diff(String),
}

/// One approval, by where it lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub session_id: String,
    pub request_id: String,
}

/// A question the cockpit is asking the person (keys go to it first).
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// "Why not?": the deny reason being typed.
    DenyReason { target: Target, text: String },
    /// A critical request: the allowing decision waits for a second key.
    ConfirmCritical { target: Target, decision: Decision },
    /// The follow-up being typed in the open session.
    Composer { text: String },
    /// "Stop this agent?"
    ConfirmStop { session_id: String },
    /// "Merge into BASE?": `y` merges, `s` squashes, `b` rebases; `u`, `S`, `B` do the same and
    /// fast-forward a clean checkout of it.
    ConfirmMerge { session_id: String, base: String },
    /// "Keep / Discard / Continue this session?": `y` does it.
    ConfirmFinish { session_id: String, finish: Finish },
    /// "Mode?": `r` readonly, `e` edit, `f` full.
    ChooseMode { session_id: String },
    /// A plan shown in full: `e` / `f` / `r` approve it into that mode, `d` denies.
    Plan(PlanReview),
    /// An agent's questions, answered one at a time.
    Questions(Answering),
    /// A review comment being typed on lines of the diff.
    Comment(CommentDraft),
    /// The session's model being chosen.
    Model(ModelChoice),
}

impl Prompt {
    /// The approval it answers, if it answers one.
    pub fn target(&self) -> Option<&Target> {
        match self {
            Prompt::DenyReason { target, .. } | Prompt::ConfirmCritical { target, .. } => {
                Some(target)
            }
            Prompt::Plan(plan) => Some(&plan.target),
            Prompt::Questions(asking) => Some(&asking.target),
            Prompt::Composer { .. }
            | Prompt::ConfirmStop { .. }
            | Prompt::ConfirmMerge { .. }
            | Prompt::ConfirmFinish { .. }
            | Prompt::ChooseMode { .. }
            | Prompt::Comment(_)
            | Prompt::Model(_) => None,
        }
    }

    /// The rows it takes on a screen of `height` rows.
    pub fn rows(&self, height: u16) -> u16 {
        let wanted = match self {
            Prompt::Plan(plan) => plan.lines.len() + 2,
            Prompt::Questions(asking) => {
                let options = asking.questions[asking.at].options.len().min(MAX_OPTIONS);
                options + 3
            }
            _ => 1,
        };
        u16::try_from(wanted).unwrap_or(u16::MAX).min(height.saturating_sub(4).max(1) / 2).max(1)
    }
}

/// A way to finish a session besides merging (the cockpit's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Ends it; its worktree and branch stay.
    Keep,
    /// Ends it and deletes its worktree and branch.
    Discard,
    /// Ends it and starts a new session on its changes.
    Continue,
}

impl Finish {
    /// The prompt's question.
    pub fn question(self) -> &'static str {
        match self {
            Finish::Keep => "Keep this session (end it; its worktree and branch stay)? ",
            Finish::Discard => {
                "Discard this session's work (its worktree and branch are deleted)? "
            }
            Finish::Continue => "Continue in a new session on this one's changes? ",
        }
    }
}

/// How a session's work goes onto its base branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Integration {
    /// A merge commit (or a fast-forward).
    Merge,
    /// One squashed commit.
    Squash,
    /// The session's commits replayed onto the base's tip.
    Rebase,
}

impl Integration {
    /// Its name in the cockpit's words.
    pub fn word(self) -> &'static str {
        match self {
            Integration::Merge => "Merge",
            Integration::Squash => "Squash",
            Integration::Rebase => "Rebase",
        }
    }
}

/// What the client loop is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// List projects and sessions again.
    Refresh,
    /// Follow a session's events (from the first one not folded yet).
    Follow {
        session_id: String,
        from_seq: u64,
    },
    Decide {
        target: Target,
        decision: Decision,
        confirmed: bool,
    },
    Send {
        session_id: String,
        text: String,
    },
    Interrupt {
        session_id: String,
    },
    Stop {
        session_id: String,
    },
    /// The session's diff (turn `turn`'s, or the whole session's), with the patch.
    Diff {
        session_id: String,
        turn: Option<u32>,
    },
    /// The session's review comments.
    Comments {
        session_id: String,
    },
    /// A new review comment.
    Comment(CommentDraft),
    /// A review comment resolved (or open again).
    ResolveComment {
        session_id: String,
        comment_id: String,
        resolved: bool,
    },
    /// The open comments not sent yet, sent to the agent as one follow-up.
    SendReview {
        session_id: String,
    },
    /// Switch the session's model.
    SetModel {
        session_id: String,
        model: String,
    },
    /// Keep, discard or continue the session.
    Finish {
        session_id: String,
        finish: Finish,
    },
    /// Switch the session's policy mode (`readonly`, `edit`, `full`).
    SetMode {
        session_id: String,
        mode: &'static str,
    },
    /// Merge the session's work into its base branch (`how`).
    Merge {
        session_id: String,
        how: Integration,
        update_checkout: bool,
    },
}

/// What came back of a [`Command`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Projects(Vec<ProjectSummary>),
    Sessions(Vec<SessionSummary>),
    /// A decision was recorded (`Ok`) or refused (`Err`: the host's words; for an approval
    /// answered first elsewhere they name who).
    Decided {
        target: Target,
        result: Result<String, String>,
    },
    /// Anything else done (`what` names it) or refused.
    Done {
        what: String,
        result: Result<(), String>,
    },
    /// A session's diff, or why there is none.
    Diff {
        session_id: String,
        result: Result<Box<GitFacts>, String>,
    },
    /// A session's review comments (after `said`, when a comment was added or resolved).
    Comments {
        session_id: String,
        said: Option<String>,
        result: Result<Vec<ReviewComment>, String>,
    },
}

/// The link to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Online,
    /// Lost; what the client said. Everything shown is as of then.
    Lost(String),
}

/// Where the transcript view stands: which row is selected (none: following the end) and
/// which row is pinned to the top or bottom of the screen. Only rows on screen are laid out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    pub selected: Option<usize>,
    pub anchor: Anchor,
    /// First and last row index drawn by the last frame (set by `render`).
    pub shown: (usize, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Anchor {
    /// The end of the transcript at the bottom of the screen.
    #[default]
    Follow,
    /// This row at the top of the screen.
    Top(usize),
    /// This row at the bottom of the screen.
    Bottom(usize),
}

/// The whole cockpit.
#[derive(Debug, Default)]
pub struct App {
    pub projects: Vec<ProjectSummary>,
    pub sessions: HashMap<String, SessionSummary>,
    pub transcripts: HashMap<String, Transcript>,
    followed: HashSet<String>,
    pub screen: Option<Screen>,
    /// The list screen the session view goes back to.
    back_to: Option<Screen>,
    pub help: bool,
    /// The selected row of the session list, and the session it is (kept across reorders).
    pub list_selected: usize,
    list_pinned: Option<String>,
    /// The selected inbox line, and the request it is (kept when others arrive or go).
    pub inbox_selected: usize,
    pub(crate) inbox_pinned: Option<Target>,
    /// The approval under the person's eyes was answered elsewhere and another took its place:
    /// the next answering key is refused once, so nobody answers a request they have not seen.
    pub selection_moved: bool,
    pub view: View,
    /// The diff shown (none while it loads), and the turn asked for (none: the whole session).
    pub diff: Option<Diff>,
    pub diff_turn: Option<u32>,
    /// Its code's syntax colours, as far as they were worked out.
    pub colours: Colours,
    /// What the host said its backends are (models, capabilities).
    pub backends: Vec<BackendInfo>,
    /// Lines of the diff on screen (set by `render`, for paging).
    pub diff_height: usize,
    pub prompt: Option<Prompt>,
    /// Rows the prompt took on screen (set by `render`, for paging a plan).
    pub prompt_rows: usize,
    /// One line for the status bar: what just happened.
    pub flash: Option<(String, Tone)>,
    pub link: Option<Link>,
    /// Unix milliseconds "now", for "5 min ago" (set by the loop each frame; fixed in tests).
    pub now_ms: i64,
    /// Answers this cockpit sent (and the host did not refuse): their resolution is ours, not
    /// "answered elsewhere", whichever of the reply and the event comes first.
    pub(crate) answered_here: HashSet<Target>,
    pub quit: bool,
    commands: Vec<Command>,
}

impl App {
    pub fn new(now_ms: i64) -> App {
        App { now_ms, link: Some(Link::Online), ..App::default() }
    }

    pub fn screen(&self) -> Screen {
        self.screen.clone().unwrap_or(Screen::Sessions)
    }

    /// What the client loop should do now (drained).
    pub fn take_commands(&mut self) -> Vec<Command> {
        std::mem::take(&mut self.commands)
    }

    pub(crate) fn command(&mut self, command: Command) {
        self.commands.push(command);
    }

    pub(crate) fn say(&mut self, text: impl Into<String>, tone: Tone) {
        self.flash = Some((text.into(), tone));
    }

    /// Every session of every project, most recently active first (archived ones are not
    /// listed by the host unless asked).
    pub fn session_list(&self) -> Vec<&SessionSummary> {
        let mut list: Vec<&SessionSummary> = self.sessions.values().collect();
        list.sort_by(|a, b| {
            b.updated_at.cmp(&a.updated_at).then_with(|| a.session_id.cmp(&b.session_id))
        });
        list
    }

    pub fn project_name(&self, project_id: Option<&str>) -> Option<String> {
        let id = project_id?;
        self.projects.iter().find(|p| p.project_id == id).map(|p| p.name.clone())
    }

    /// Opens `session_id`'s transcript (following its end).
    pub fn open(&mut self, session_id: &str) {
        let screen = self.screen();
        if !matches!(screen, Screen::Session(_)) {
            self.back_to = Some(screen);
        }
        self.screen = Some(Screen::Session(session_id.to_owned()));
        self.view = View::default();
        self.selection_moved = false;
        self.follow(session_id);
    }

    /// Shows `session_id`'s diff (asked of the host again): the same turn as before if it is
    /// the diff shown, else the whole session's.
    pub fn show_diff(&mut self, session_id: &str) {
        let same = self.diff.as_ref().is_some_and(|d| d.session_id == session_id);
        let turn = if same { self.diff_turn } else { None };
        self.show_diff_turn(session_id, turn);
    }

    /// Back from a session to the list it was opened from.
    pub fn back(&mut self) {
        self.screen = Some(self.back_to.take().unwrap_or(Screen::Sessions));
    }

    fn follow(&mut self, session_id: &str) {
        if self.followed.insert(session_id.to_owned()) {
            let from_seq = self.transcripts.get(session_id).map_or(0, Transcript::last_seq) + 1;
            self.command(Command::Follow { session_id: session_id.to_owned(), from_seq });
        }
    }

    /// Follows every session with something to answer (for the inbox).
    fn follow_waiting(&mut self) {
        let waiting: Vec<String> = self
            .sessions
            .values()
            .filter(|s| {
                !s.read_only
                    && (s.pending_approvals > 0 || s.status == SessionStatus::AwaitingApproval)
            })
            .map(|s| s.session_id.clone())
            .collect();
        for id in waiting {
            self.follow(&id);
        }
    }

    /// What the host pushed.
    pub fn on_host(&mut self, message: HostMessage) {
        match message {
            HostMessage::Event { event } => self.on_event(&event),
            HostMessage::Events { events, .. } => {
                for event in &events {
                    self.on_event(event);
                }
            }
            HostMessage::SessionChanged { session } => {
                if session.archived {
                    self.sessions.remove(&session.session_id);
                } else {
                    self.sessions.insert(session.session_id.clone(), session);
                }
                self.follow_waiting();
                self.clamp_list();
                self.clamp();
            }
            HostMessage::Welcome { .. }
            | HostMessage::Ack { .. }
            | HostMessage::Projects { .. }
            | HostMessage::Sessions { .. }
            | HostMessage::GitFacts { .. }
            | HostMessage::Files { .. }
            | HostMessage::Branches { .. }
            | HostMessage::Devices { .. }
            | HostMessage::Push { .. }
            | HostMessage::FileContent { .. }
            | HostMessage::Error { .. }
            | HostMessage::Unsupported { .. } => {}
        }
    }

    fn on_event(&mut self, event: &Event) {
        let mut moved = false;
        if let EventKind::ApprovalResolved(r) = &event.kind {
            let target =
                Target { session_id: event.session_id.clone(), request_id: r.request_id.clone() };
            let ours = self.answered_here.contains(&target);
            let asking = self.prompt.as_ref().and_then(Prompt::target) == Some(&target);
            if asking {
                self.prompt = None;
            }
            if !ours && (asking || self.was_shown(&target)) {
                moved = true;
                let how = decision_words(r.decision);
                let by = crate::sanitize::line(&r.by);
                self.say(format!("Answered elsewhere: {how} by {by}"), Tone::Warn);
            }
        }
        self.transcripts.entry(event.session_id.clone()).or_default().fold(event);
        // Only these change what waits (a catch-up of 100,000 events re-sorts the inbox for them
        // alone).
        if matches!(
            event.kind,
            EventKind::ApprovalRequested(_)
                | EventKind::ApprovalResolved(_)
                | EventKind::RunFinished(_)
        ) {
            self.clamp();
        }
        if moved {
            // Guarded only when another request now stands where the answered one was.
            self.selection_moved = match self.screen() {
                Screen::Inbox => !self.inbox().is_empty(),
                Screen::Session(id) => self.first_pending(&id).is_some(),
                Screen::Sessions | Screen::Diff(_) => false,
            };
        }
    }

    /// What came back of a command.
    pub fn on_reply(&mut self, reply: Reply) {
        match reply {
            Reply::Projects(projects) => self.projects = projects,
            Reply::Sessions(sessions) => {
                self.sessions = sessions
                    .into_iter()
                    .filter(|s| !s.archived)
                    .map(|s| (s.session_id.clone(), s))
                    .collect();
                self.follow_waiting();
                self.clamp_list();
            }
            Reply::Decided { target, result } => match result {
                Ok(said) => self.say(said, Tone::Ok),
                Err(why) => {
                    self.answered_here.remove(&target);
                    self.say(why, Tone::Warn);
                }
            },
            Reply::Done { what, result } => match result {
                Ok(()) => self.say(what, Tone::Ok),
                Err(why) => self.say(format!("{what}: {why}"), Tone::Warn),
            },
            Reply::Diff { session_id, result } => match result {
                Ok(facts) => {
                    let top = self
                        .diff
                        .as_ref()
                        .filter(|d| d.session_id == session_id)
                        .map_or(0, |d| d.top);
                    let mut diff = Diff::of(&session_id, &facts);
                    diff.top = top.min(diff.rows.len().saturating_sub(1));
                    diff.cursor = diff.cursor.max(diff.top);
                    self.diff = Some(diff);
                    self.command(Command::Comments { session_id });
                }
                Err(why) => self.say(format!("The diff: {why}"), Tone::Warn),
            },
            Reply::Comments { session_id, said, result } => match result {
                Ok(comments) => {
                    if let Some(said) = said {
                        self.say(said, Tone::Ok);
                    }
                    self.on_comments(&session_id, comments);
                }
                Err(why) => self.say(format!("Review comments: {why}"), Tone::Warn),
            },
        }
        self.clamp();
    }

    /// The link went down or came back (`None`: back).
    pub fn on_link(&mut self, lost: Option<String>) {
        match lost {
            Some(why) => self.link = Some(Link::Lost(why)),
            None => {
                if matches!(self.link, Some(Link::Lost(_))) {
                    self.say("Reconnected", Tone::Ok);
                }
                self.link = Some(Link::Online);
                self.command(Command::Refresh);
            }
        }
    }

    pub fn online(&self) -> bool {
        !matches!(self.link, Some(Link::Lost(_)))
    }

    /// Selects row `index` of the session list.
    pub fn select_session(&mut self, index: usize) {
        let list = self.session_list();
        let index = index.min(list.len().saturating_sub(1));
        self.list_pinned = list.get(index).map(|s| s.session_id.clone());
        self.list_selected = index;
    }

    /// Keeps the session list's selection on its session as the list reorders.
    fn clamp_list(&mut self) {
        let list = self.session_list();
        let found =
            self.list_pinned.as_ref().and_then(|id| list.iter().position(|s| s.session_id == *id));
        let index = found.unwrap_or(self.list_selected).min(list.len().saturating_sub(1));
        self.list_pinned = list.get(index).map(|s| s.session_id.clone());
        self.list_selected = index;
    }
}
