//! Agent text made safe for a terminal: no escape sequence or control character of an agent's
//! ever reaches it (they are shown as visible symbols instead), and no bidi override reorders
//! what a person reads.

/// `text` with every control character replaced by a visible symbol: C0 controls as their
/// Unicode control pictures (ESC shows as `␛`), DEL as `␡`, C1 controls and bidirectional
/// overrides/isolates as `�`. Tabs become spaces; newlines are kept for the caller to split on
/// (see [`line`] for text that must stay on one line).
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c => out.push(visible(c)),
        }
    }
    out
}

/// [`clean`], with newlines (and carriage returns) shown as `⏎` so the result is one line.
pub fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('⏎'),
            '\t' => out.push(' '),
            c => out.push(visible(c)),
        }
    }
    out
}

/// The symbol a terminal may show for `c`.
fn visible(c: char) -> char {
    match c {
        // C0 controls (NUL … US, and CR) as control pictures U+2400 … U+241F.
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        // C1 controls: CSI (U+009B) and OSC (U+009D) start sequences on some terminals.
        '\u{80}'..='\u{9f}' => '\u{fffd}',
        // Bidi embeddings, overrides and isolates ("Trojan Source").
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => '\u{fffd}',
        c => c,
    }
}

/// True when `text` holds nothing a terminal would act on (what [`clean`] guarantees).
pub fn is_clean(text: &str) -> bool {
    text.chars().all(|c| c == '\n' || visible(c) == c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_become_visible_symbols() {
        let hostile = "a\u{1b}[2J\u{1b}]2;pwned\u{7}b\rc\u{9b}31m\u{7f}\u{202e}d";
        let shown = clean(hostile);
        assert!(is_clean(&shown), "{shown:?}");
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{7}') && !shown.contains('\r'));
        assert_eq!(shown, "a␛[2J␛]2;pwned␇b␍c�31m␡�d");
        assert!(!is_clean(hostile));
    }

    #[test]
    fn newlines_stay_for_blocks_and_fold_for_one_line() {
        assert_eq!(clean("one\ntwo\tx"), "one\ntwo    x");
        assert_eq!(line("one\ntwo\tx"), "one⏎two x");
        assert_eq!(clean("naïve ✓ 日本"), "naïve ✓ 日本");
    }
}
