//! Names derived from what a person typed: session titles and worktree slugs.

/// A title from a prompt: its first line, at most 60 characters.
pub fn title_from_prompt(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    if title.is_empty() { "untitled".into() } else { title }
}

/// A worktree slug (`[a-z0-9][a-z0-9-]*`, ≤ 48 chars): words of the title plus a short id.
pub fn slug_for(title: &str, session_id: &str) -> String {
    let mut words = String::new();
    for word in title.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        if words.len() + word.len() + 1 > 36 {
            break;
        }
        if !words.is_empty() {
            words.push('-');
        }
        words.push_str(&word.to_ascii_lowercase());
    }
    let short: String = session_id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    if words.is_empty() { format!("s-{short}") } else { format!("{words}-{short}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_valid_and_unique_per_session() {
        let s = slug_for("Fix the flaky test in parser.rs!", "0f3a9c2e-1111-2222");
        assert_eq!(s, "fix-the-flaky-test-in-parser-rs-0f3a9c2e");
        assert_eq!(slug_for("¿¡!", "abc"), "s-abc");
        assert!(slug_for(&"word ".repeat(40), "ffff").len() <= 48);
    }

    #[test]
    fn titles_and_quotes() {
        assert_eq!(title_from_prompt("  add export\nmore"), "add export");
    }
}
