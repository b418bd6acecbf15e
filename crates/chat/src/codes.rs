//! Short codes for what waits on a person in one chat (`/cc approve K7P2`): four characters of
//! an alphabet without look-alikes, with a digit in each (so a reason's first word is never read
//! as a code), unique among the chat's pending items.

use std::collections::BTreeMap;

/// Characters a code is made of: no `0`/`O`, `1`/`I`/`L`, so a code read aloud or typed on a
/// phone is not mistaken.
const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const DIGITS: &[u8] = b"23456789";
const CODE_LEN: usize = 4;

/// The codes of one chat's pending items (approvals, plans), by code.
#[derive(Debug, Default)]
pub struct CodeBook {
    by_code: BTreeMap<String, String>,
    /// Where the next code is drawn from (a counter through a fixed permutation: unique,
    /// not sequential-looking, no randomness needed).
    next: u64,
}

impl CodeBook {
    pub fn new() -> Self {
        Self::default()
    }

    /// The code for `item` (the same one when it already has one).
    pub fn assign(&mut self, item: &str) -> String {
        if let Some((code, _)) = self.by_code.iter().find(|(_, i)| *i == item) {
            return code.clone();
        }
        loop {
            let code = code_of(self.next);
            self.next = self.next.wrapping_add(1);
            if !self.by_code.contains_key(&code) {
                self.by_code.insert(code.clone(), item.to_owned());
                return code;
            }
        }
    }

    /// The item a code names (any case).
    pub fn resolve(&self, code: &str) -> Option<&str> {
        self.by_code.get(&code.to_ascii_uppercase()).map(String::as_str)
    }

    /// The one pending item, when there is exactly one (an answer without a code means it).
    pub fn only(&self) -> Option<(&str, &str)> {
        let mut items = self.by_code.iter();
        match (items.next(), items.next()) {
            (Some((code, item)), None) => Some((code.as_str(), item.as_str())),
            _ => None,
        }
    }

    /// Forgets `item` (resolved, expired); its code may be given out again later.
    pub fn remove(&mut self, item: &str) {
        self.by_code.retain(|_, i| i != item);
    }

    pub fn len(&self) -> usize {
        self.by_code.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_code.is_empty()
    }
}

/// The `n`-th code of the sequence a [`CodeBook`] draws from (for a store that keeps its own
/// counter across restarts).
pub fn nth(n: u64) -> String {
    code_of(n)
}

/// The `n`-th code: three characters of the alphabet and a digit, its place fixed by `n`.
fn code_of(n: u64) -> String {
    // A multiplicative permutation of the code space (odd multiplier, modulus a power of two
    // above the space) so consecutive codes share no visible pattern.
    let space = (ALPHABET.len() as u64).pow(CODE_LEN as u32 - 1) * DIGITS.len() as u64;
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) % space;
    let digit = DIGITS[(x % DIGITS.len() as u64) as usize];
    x /= DIGITS.len() as u64;
    let digit_at = (x % CODE_LEN as u64) as usize;
    let mut out = Vec::with_capacity(CODE_LEN);
    for _ in 0..CODE_LEN - 1 {
        out.push(ALPHABET[(x % ALPHABET.len() as u64) as usize]);
        x /= ALPHABET.len() as u64;
    }
    out.insert(digit_at, digit);
    out.into_iter().map(char::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_short_unambiguous_unique_and_have_a_digit() {
        let mut book = CodeBook::new();
        let codes: Vec<String> = (0..500).map(|i| book.assign(&format!("req-{i}"))).collect();
        let unique: std::collections::BTreeSet<&String> = codes.iter().collect();
        assert_eq!(unique.len(), 500);
        for code in &codes {
            assert_eq!(code.len(), CODE_LEN);
            assert!(code.bytes().all(|b| ALPHABET.contains(&b)), "{code}");
            assert!(code.bytes().any(|b| b.is_ascii_digit()), "{code}");
            assert!(crate::command::parse(&format!("/cc approve {code}")).is_ok_and(|c| matches!(
                c,
                crate::command::Command::Approve(a) if a.code.as_deref() == Some(code.as_str())
            )));
        }
    }

    #[test]
    fn a_code_resolves_in_any_case_and_only_one_pending_is_implied() {
        let mut book = CodeBook::new();
        let a = book.assign("req-a");
        assert_eq!(book.assign("req-a"), a, "the same item keeps its code");
        assert_eq!(book.resolve(&a.to_ascii_lowercase()), Some("req-a"));
        assert_eq!(book.only(), Some((a.as_str(), "req-a")));
        let b = book.assign("req-b");
        assert_eq!(book.only(), None, "two pending: an answer needs a code");
        book.remove("req-a");
        assert_eq!(book.resolve(&a), None);
        assert_eq!(book.only(), Some((b.as_str(), "req-b")));
        assert_eq!(book.resolve("ZZZZ"), None);
    }
}
