//! Long text into messages a chat service takes: each at most its limit (measured the
//! service's way: Telegram counts UTF-16 units), split at line ends or spaces where it can, and
//! never inside a code fence — a fence cut by a split is closed at the end of one message and
//! opened again, with its language, at the start of the next.

/// How a service measures a message's length.
pub type Measure = fn(&str) -> usize;

/// Telegram's measure: UTF-16 code units.
pub fn utf16_units(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Characters.
pub fn chars(text: &str) -> usize {
    text.chars().count()
}

/// The smallest limit: room for a fence's closing and reopening lines and some text.
pub const MIN_LIMIT: usize = 64;
/// How much of a fence's opening line is repeated when it is reopened.
const MAX_REOPENED: usize = 16;

/// One message: a slice of the original text, with the fence lines the split added.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Part {
    /// The fence reopened in front (`"```rust"`), when the previous message cut one.
    reopened: Option<String>,
    /// The original text this message carries.
    body: String,
    /// A closing fence added at the end (this message cuts a fence).
    closed: bool,
}

impl Part {
    fn render(&self) -> String {
        let mut out = String::new();
        if let Some(fence) = &self.reopened {
            out.push_str(fence);
            out.push('\n');
        }
        out.push_str(&self.body);
        if self.closed {
            if !self.body.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("```");
        }
        out
    }
}

/// Splits `text` into messages of at most `limit` (raised to [`MIN_LIMIT`]) by `measure`.
pub fn split(text: &str, limit: usize, measure: Measure) -> Vec<String> {
    parts(text, limit.max(MIN_LIMIT), measure).iter().map(Part::render).collect()
}

fn parts(text: &str, limit: usize, measure: Measure) -> Vec<Part> {
    let mut done = Vec::new();
    let mut current = Part::default();
    // The opening line of the fence the text is inside at the end of `current`.
    let mut open_fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while !rest.is_empty() {
            // What the rendered message takes so far, with room kept for a closing fence
            // (also when none is open: the piece may be a fence line that opens one).
            let closing = measure("\n```");
            let used = measure(&current.render()) + closing;
            let room = limit.saturating_sub(used);
            let fresh = current.body.is_empty();
            // A fence line is never cut (the next message would not see a fence), unless it
            // does not fit even a message of its own.
            let piece = if fence_line(line).is_some() && measure(rest) > room && !fresh {
                ""
            } else {
                longest_prefix(rest, room, measure)
            };
            if piece.is_empty() {
                current.closed = open_fence.is_some();
                done.push(std::mem::take(&mut current));
                current.reopened = open_fence.clone();
                continue;
            }
            current.body.push_str(piece);
            rest = &rest[piece.len()..];
        }
        if let Some(fence) = fence_line(line) {
            open_fence = match open_fence {
                Some(_) => None,
                // Reopened with at most its first 16 characters (the language), so a message
                // always has room for text.
                None => Some(fence.chars().take(MAX_REOPENED).collect()),
            };
        }
    }
    if !current.body.is_empty() {
        done.push(current);
    }
    done
}

/// A line that opens or closes a code fence: the fence as written (with its language).
fn fence_line(line: &str) -> Option<&str> {
    let trimmed = line.trim_end_matches(['\n', '\r']).trim_start();
    trimmed.starts_with("```").then_some(trimmed)
}

/// The longest prefix of `text` (on a character boundary) that measures at most `room`,
/// ending after a space when the whole does not fit and one is not too far back.
fn longest_prefix(text: &str, room: usize, measure: Measure) -> &str {
    if measure(text) <= room {
        return text;
    }
    let mut end = 0;
    for (i, c) in text.char_indices() {
        let next = i + c.len_utf8();
        if measure(&text[..next]) > room {
            break;
        }
        end = next;
    }
    match text[..end].rfind(' ') {
        Some(space) if space > 0 && space + 1 >= end / 2 => &text[..space + 1],
        _ => &text[..end],
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn fences(text: &str) -> usize {
        text.lines().filter(|l| l.trim_start().starts_with("```")).count()
    }

    #[test]
    fn short_text_is_one_message() {
        assert_eq!(split("hello\nworld", 100, chars), vec!["hello\nworld".to_owned()]);
        assert!(split("", 100, chars).is_empty());
    }

    #[test]
    fn a_fence_cut_by_the_limit_is_closed_and_reopened_with_its_language() {
        let body: String = (0..40).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here:\n```rust\n{body}```\ndone\n");
        let messages = split(&text, 200, chars);
        assert!(messages.len() > 2, "{messages:?}");
        for m in &messages {
            assert!(chars(m) <= 200, "{} > 200", chars(m));
            assert_eq!(fences(m) % 2, 0, "an unbalanced fence in {m:?}");
        }
        assert!(messages[1].starts_with("```rust\n"), "{:?}", messages[1]);
    }

    #[test]
    fn telegram_counts_utf16_units() {
        let text = "😀".repeat(100); // 2 units each
        let messages = split(&text, 64, utf16_units);
        assert!(messages.iter().all(|m| utf16_units(m) <= 64));
        assert_eq!(messages.concat(), text);
    }

    proptest! {
        #[test]
        fn every_message_fits_its_fences_balance_and_nothing_is_lost(
            lines in proptest::collection::vec(
                prop_oneof![
                    "[a-z ]{0,90}",
                    Just("```py".to_owned()),
                    Just("```".to_owned()),
                    "[é😀a ]{0,40}",
                ],
                0..60,
            ),
            limit in 64usize..300,
        ) {
            let text = lines.join("\n");
            let parts = parts(&text, limit, utf16_units);
            let bodies: String = parts.iter().map(|p| p.body.as_str()).collect();
            prop_assert_eq!(&bodies, &text);
            let mut inside = false;
            for (i, part) in parts.iter().enumerate() {
                let last = i + 1 == parts.len();
                let rendered = part.render();
                prop_assert!(utf16_units(&rendered) <= limit, "{} > {limit}", utf16_units(&rendered));
                prop_assert_eq!(part.reopened.is_some(), inside, "a cut fence is reopened");
                inside ^= fences(&part.body) % 2 == 1;
                // (The text's own unclosed fence at its end is its own.)
                prop_assert_eq!(part.closed, inside && !last, "a cut fence is closed");
            }
        }
    }
}
