//! Streaming one simulated API message: stream_event lines, per-block assistant lines, aborts.

use crate::session::{Session, Stop};
use crate::wire::prefixed_id;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

/// Delay between stream chunks when the prompt says `slow`.
pub const SLOW_CHUNK_DELAY: Duration = Duration::from_millis(200);
/// Delay between the text deltas of a `stream N` reply.
pub const STREAM_DELTA_DELAY: Duration = Duration::from_millis(250);
/// The same with the word `brisk` (about a model's token pace: latency benches).
pub const STREAM_BRISK_DELAY: Duration = Duration::from_millis(25);

/// One content block of a simulated assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// `{"type":"thinking"}`.
    Thinking(String),
    /// `{"type":"text"}`.
    Text(String),
    /// `{"type":"tool_use"}`.
    ToolUse {
        /// `toolu_…` id.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input.
        input: Value,
    },
}

impl Block {
    /// The complete block, as carried by the `assistant` line.
    pub fn full(&self) -> Value {
        match self {
            Self::Thinking(t) => json!({"type": "thinking", "thinking": t, "signature": "sim"}),
            Self::Text(t) => json!({"type": "text", "text": t}),
            Self::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        }
    }

    /// The empty block of `content_block_start`.
    fn start(&self) -> Value {
        match self {
            Self::Thinking(_) => json!({"type": "thinking", "thinking": "", "signature": ""}),
            Self::Text(_) => json!({"type": "text", "text": ""}),
            Self::ToolUse { id, name, .. } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
        }
    }

    /// The deltas (at least two) and the text each one adds; text comes in about
    /// `text_pieces` pieces.
    fn deltas(&self, text_pieces: usize) -> Vec<(Value, String)> {
        match self {
            Self::Thinking(t) => {
                let mut d: Vec<_> = split_pieces(t, 3)
                    .into_iter()
                    .map(|p| (json!({"type": "thinking_delta", "thinking": p}), p))
                    .collect();
                d.push((json!({"type": "signature_delta", "signature": "sim"}), String::new()));
                d
            }
            Self::Text(t) => split_pieces(t, text_pieces)
                .into_iter()
                .map(|p| (json!({"type": "text_delta", "text": p}), p))
                .collect(),
            Self::ToolUse { input, .. } => split_pieces(&input.to_string(), 2)
                .into_iter()
                .map(|p| (json!({"type": "input_json_delta", "partial_json": p}), String::new()))
                .collect(),
        }
    }

    /// Rough output-token count.
    pub fn tokens(&self) -> u64 {
        let len = match self {
            Self::Thinking(t) | Self::Text(t) => t.len(),
            Self::ToolUse { input, .. } => input.to_string().len(),
        };
        (len as u64).div_ceil(4)
    }
}

/// Splits `s` into `n` non-empty pieces (fewer when it is too short), at spaces when it has
/// enough words.
pub fn split_pieces(s: &str, n: usize) -> Vec<String> {
    let words: Vec<&str> = s.split_inclusive(' ').collect();
    let units: Vec<String> = if words.len() >= n {
        words.iter().map(|w| (*w).to_owned()).collect()
    } else {
        s.chars().map(String::from).collect()
    };
    if units.is_empty() {
        return vec![String::new()];
    }
    // Exactly `n` pieces when there are enough units, as even as they come.
    let n = n.clamp(1, units.len());
    (0..n).map(|i| units[i * units.len() / n..(i + 1) * units.len() / n].concat()).collect()
}

/// Per-turn bookkeeping.
#[derive(Debug)]
pub struct TurnState {
    /// When the turn started.
    pub started: Instant,
    /// Simulated API calls so far (`num_turns`).
    pub api_calls: u64,
    /// `assistant` lines emitted so far (for `crash_mid_turn`).
    pub assistant_lines: u64,
    /// Tokens "read" per API call.
    pub input_tokens: u64,
    /// Tokens "written" in the turn.
    pub output_tokens: u64,
    /// Sleep between chunks.
    pub slow: bool,
    /// `stream N`: the next message's text comes in N deltas, paced.
    pub stream: Option<usize>,
    /// `fast`: those deltas come without a pause.
    pub fast: bool,
    /// `brisk`: those deltas come every [`STREAM_BRISK_DELAY`].
    pub brisk: bool,
    /// `permission_denials` entries.
    pub denials: Vec<Value>,
}

/// How streaming a message ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streamed {
    /// Every block was delivered.
    Done,
    /// An interrupt stopped it; the aborted lines are already out.
    Aborted,
}

impl<W: Write> Session<W> {
    /// Lets time pass between chunks (slow) or just handles waiting input, then reports
    /// whether an interrupt arrived.
    fn interrupt_point(&mut self, st: &TurnState, first: bool, paced: bool) -> Result<bool, Stop> {
        if st.slow && !first {
            self.wait(SLOW_CHUNK_DELAY)?;
        } else if paced && !first {
            self.wait(if st.brisk { STREAM_BRISK_DELAY } else { STREAM_DELTA_DELAY })?;
        } else {
            self.drain()?;
        }
        Ok(self.interrupted)
    }

    /// Streams one simulated API message made of `blocks`.
    pub(crate) fn stream_message(
        &mut self,
        st: &mut TurnState,
        blocks: &[Block],
        stop_reason: &str,
    ) -> Result<Streamed, Stop> {
        let partial = self.args.include_partial_messages;
        let msg_id = prefixed_id("msg_sim_");
        let req_id = prefixed_id("req_sim_");
        st.api_calls += 1;
        if partial {
            let line = self.ctx.message_start(&msg_id, st.input_tokens);
            self.emit(&line)?;
        }
        let mut first = true;
        let mut out_tokens = 0;
        let text_pieces = st.stream.unwrap_or(3);
        for (index, block) in blocks.iter().enumerate() {
            let mut started = false;
            let mut acc = String::new();
            let paced = st.stream.is_some() && !st.fast && matches!(block, Block::Text(_));
            for (delta, piece) in block.deltas(text_pieces) {
                if self.interrupt_point(st, first, paced)? {
                    return self.abort_stream(&msg_id, &req_id, index, block, &acc, started);
                }
                first = false;
                if partial {
                    if !started {
                        let line = self.ctx.stream_event(
                            &msg_id,
                            json!({"type": "content_block_start", "index": index, "content_block": block.start()}),
                        );
                        self.emit(&line)?;
                        started = true;
                    }
                    let line = self.ctx.stream_event(
                        &msg_id,
                        json!({"type": "content_block_delta", "index": index, "delta": delta}),
                    );
                    self.emit(&line)?;
                }
                acc.push_str(&piece);
            }
            if self.interrupt_point(st, true, false)? {
                return self.abort_stream(&msg_id, &req_id, index, block, &acc, started);
            }
            let line = self.ctx.assistant(&msg_id, &req_id, block.full(), st.input_tokens);
            self.emit(&line)?;
            st.assistant_lines += 1;
            if self.faults.crash_mid_turn && st.assistant_lines == 1 {
                eprintln!("nucleic-sim: crash_mid_turn fault injected");
                return Err(Stop(3));
            }
            out_tokens += block.tokens();
            if partial {
                let line = self
                    .ctx
                    .stream_event(&msg_id, json!({"type": "content_block_stop", "index": index}));
                self.emit(&line)?;
            }
        }
        st.output_tokens += out_tokens;
        if partial {
            let line = self.ctx.message_delta(&msg_id, Some(stop_reason), out_tokens.max(1));
            self.emit(&line)?;
            let line = self.ctx.stream_event(&msg_id, json!({"type": "message_stop"}));
            self.emit(&line)?;
        }
        Ok(Streamed::Done)
    }

    /// Emits what the real CLI shows after an interrupt mid-stream.
    fn abort_stream(
        &mut self,
        msg_id: &str,
        req_id: &str,
        index: usize,
        block: &Block,
        acc: &str,
        started: bool,
    ) -> Result<Streamed, Stop> {
        let mut next_block = index;
        if matches!(block, Block::Text(_)) && !acc.is_empty() {
            let mut line =
                self.ctx.assistant(msg_id, req_id, json!({"type": "text", "text": acc}), 0);
            line["aborted"] = json!(true);
            self.emit(&line)?;
            next_block = index + 1;
        }
        let line = self.ctx.user_text("[Request interrupted by user]");
        self.emit(&line)?;
        if self.args.include_partial_messages {
            if started {
                let line = self
                    .ctx
                    .stream_event(msg_id, json!({"type": "content_block_stop", "index": index}));
                self.emit(&line)?;
            }
            let mut line = self.ctx.stream_event(msg_id, json!({"type": "message_stop"}));
            line["abandoned_blocks"] =
                json!({"api_message_id": msg_id, "from_block_index": next_block});
            self.emit(&line)?;
        }
        Ok(Streamed::Aborted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_text() {
        for s in ["Done.", "I'll write a.txt.", "a b c d e f g", "x"] {
            let p = split_pieces(s, 3);
            assert_eq!(p.concat(), s);
            assert!(p.len() >= 2 || s.chars().count() < 2, "{s:?} -> {p:?}");
        }
        let b = Block::ToolUse { id: "t".into(), name: "Write".into(), input: json!({"a": 1}) };
        assert_eq!(b.deltas(3).len(), 2);
        assert_eq!(Block::Text("a b c d e f g h".into()).deltas(8).len(), 8);
        assert_eq!(
            Block::Thinking("hmm ok".into()).deltas(3).last().unwrap().0["type"],
            "signature_delta"
        );
    }
}
