//! Deterministic mutation of seed inputs: byte flips, truncations, splices, garbled or
//! duplicated JSON values, huge numbers, deep nesting and invalid UTF-8, from a seeded PRNG.

use serde_json::Value;

/// A small xorshift PRNG: the same seed always gives the same inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Zero is a fixed point of xorshift; mix the seed so every seed works.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

/// Bytes that JSON and line framing care about.
const INTERESTING_BYTES: &[u8] =
    b"\0\n\r\t \"\\{}[],:-+.0123456789eEtfnu\x7f\x80\xbf\xc0\xc3\xed\xf0\xf4\xff";

/// Values that stress number handling, strings and types.
const INTERESTING_VALUES: &[&str] = &[
    "18446744073709551616",
    "-9223372036854775809",
    "9223372036854775807",
    "-1",
    "0",
    "1e308",
    "1e400",
    "-1e400",
    "0.000000000000000000000000000001",
    "1.5",
    "null",
    "true",
    "\"\"",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "\"💥\"",
    "[]",
    "{}",
    "[null]",
    "{\"type\":null}",
    "\"1970-01-01T00:00:00Z\"",
    "\"9999-12-31T23:59:59.999999999Z\"",
    "\"not a date\"",
];

/// Applies 1–4 random mutations to `input`; `others` are inputs to splice from.
pub fn mutate(rng: &mut Rng, input: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut out = input.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        out = mutate_once(rng, out, others);
    }
    out
}

fn mutate_once(rng: &mut Rng, mut b: Vec<u8>, others: &[Vec<u8>]) -> Vec<u8> {
    match rng.below(14) {
        0 | 1 => {
            // Flip one bit.
            if !b.is_empty() {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            b
        }
        2 => {
            // Overwrite a byte with an interesting one.
            if !b.is_empty() {
                let i = rng.below(b.len());
                b[i] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
            }
            b
        }
        3 => {
            // Truncate.
            let at = rng.below(b.len() + 1);
            b.truncate(at);
            b
        }
        4 => {
            // Splice: our head, another input's tail.
            let Some(other) = rng.pick(others) else { return b };
            let at = rng.below(b.len() + 1);
            let from = rng.below(other.len() + 1);
            b.truncate(at);
            b.extend_from_slice(&other[from..]);
            b
        }
        5 => {
            // Delete a range.
            let start = rng.below(b.len() + 1);
            let end = (start + 1 + rng.below(32)).min(b.len());
            b.drain(start..end.max(start));
            b
        }
        6 => {
            // Duplicate a range in place.
            let start = rng.below(b.len() + 1);
            let end = (start + 1 + rng.below(64)).min(b.len());
            let chunk = b[start..end.max(start)].to_vec();
            let at = rng.below(b.len() + 1);
            b.splice(at..at, chunk);
            b
        }
        7 => {
            // Insert invalid UTF-8 (a lone continuation, an overlong, a surrogate, a cut sequence).
            const BAD: &[&[u8]] = &[b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf0\x9f", b"\xff"];
            let at = rng.below(b.len() + 1);
            let bad = BAD[rng.below(BAD.len())];
            b.splice(at..at, bad.iter().copied());
            b
        }
        8 => {
            // Deep nesting around the whole input or at a random place.
            let depth = 1 + rng.below(300);
            let (open, close) = if rng.one_in(2) { (b'[', b']') } else { (b'{', b'}') };
            if open == b'{' {
                let mut out = Vec::new();
                for _ in 0..depth {
                    out.extend_from_slice(b"{\"a\":");
                }
                out.extend_from_slice(b"1");
                out.extend(std::iter::repeat_n(close, depth));
                let at = rng.below(b.len() + 1);
                b.splice(at..at, out);
                b
            } else {
                let mut out = vec![open; depth];
                out.extend_from_slice(&b);
                out.extend(std::iter::repeat_n(close, depth));
                out
            }
        }
        9 => {
            // A long run of one byte (a huge string or number).
            let at = rng.below(b.len() + 1);
            let byte = *rng.pick(b"9a\" \\{").unwrap_or(&b'9');
            let len = 1 + rng.below(4096);
            b.splice(at..at, std::iter::repeat_n(byte, len));
            b
        }
        _ => mutate_json(rng, b, others),
    }
}

/// Structure-aware mutations of a JSON document; non-JSON input gets a byte mutation instead.
fn mutate_json(rng: &mut Rng, b: Vec<u8>, others: &[Vec<u8>]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(&b) else {
        let mut b = b;
        if !b.is_empty() {
            let i = rng.below(b.len());
            b[i] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
        }
        return b;
    };
    let nodes = count_nodes(&value);
    let target = rng.below(nodes);
    let donor = rng
        .pick(others)
        .and_then(|o| serde_json::from_slice::<Value>(o).ok())
        .map(|v| random_node(rng, &v));
    let mut seen = 0;
    let kind = rng.below(6);
    visit_mut(&mut value, &mut |v| {
        if seen == target {
            match kind {
                0 => {
                    let text = INTERESTING_VALUES[rng.below(INTERESTING_VALUES.len())];
                    *v = serde_json::from_str(text).unwrap_or(Value::Null);
                }
                1 => {
                    if let Some(d) = donor.clone() {
                        *v = d;
                    }
                }
                2 => {
                    // Change the value's type, keeping something of its content.
                    *v = match v.take() {
                        Value::String(s) => Value::Array(vec![Value::String(s)]),
                        Value::Array(a) => a.into_iter().next().unwrap_or(Value::Null),
                        Value::Object(o) => Value::Array(o.into_iter().map(|(_, v)| v).collect()),
                        Value::Number(n) => Value::String(n.to_string()),
                        Value::Bool(x) => Value::Number(u64::from(x).into()),
                        Value::Null => Value::Object(serde_json::Map::new()),
                    };
                }
                3 => {
                    // Drop a key or an element.
                    match v {
                        Value::Object(o) if !o.is_empty() => {
                            let i = rng.below(o.len());
                            if let Some(k) = o.keys().nth(i).cloned() {
                                o.remove(&k);
                            }
                        }
                        Value::Array(a) if !a.is_empty() => {
                            a.remove(rng.below(a.len()));
                        }
                        _ => *v = Value::Null,
                    }
                }
                4 => {
                    // Duplicate an element or grow an array a lot.
                    if let Value::Array(a) = v
                        && let Some(first) = a.first().cloned()
                    {
                        let n = 1 + rng.below(200);
                        a.extend(std::iter::repeat_n(first, n));
                    } else {
                        *v = Value::Array(vec![v.take(), Value::Null]);
                    }
                }
                _ => {
                    // A string value replaced by a long or odd string.
                    let s: String = match rng.below(4) {
                        0 => "x".repeat(1 + rng.below(70_000)),
                        1 => "\u{0}\u{feff}\u{202e}\u{10ffff}".to_owned(),
                        2 => "\n".to_owned(),
                        _ => String::new(),
                    };
                    *v = Value::String(s);
                }
            }
        }
        seen += 1;
    });
    let mut text = serde_json::to_vec(&value).unwrap_or(b);
    if rng.one_in(8) {
        // A duplicated key: JSON text that no serializer writes but parsers must survive.
        if let Some(pos) = text.iter().position(|&c| c == b'{') {
            text.splice(pos + 1..pos + 1, b"\"type\":\"dup\",".iter().copied());
        }
    }
    text
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count_nodes).sum(),
        Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

fn random_node(rng: &mut Rng, v: &Value) -> Value {
    let target = rng.below(count_nodes(v));
    let mut seen = 0;
    let mut found = Value::Null;
    visit(v, &mut |node| {
        if seen == target {
            found = node.clone();
        }
        seen += 1;
    });
    found
}

fn visit(v: &Value, f: &mut impl FnMut(&Value)) {
    f(v);
    match v {
        Value::Array(a) => a.iter().for_each(|x| visit(x, f)),
        Value::Object(o) => o.values().for_each(|x| visit(x, f)),
        _ => {}
    }
}

fn visit_mut(v: &mut Value, f: &mut impl FnMut(&mut Value)) {
    f(v);
    match v {
        Value::Array(a) => a.iter_mut().for_each(|x| visit_mut(x, f)),
        Value::Object(o) => o.values_mut().for_each(|x| visit_mut(x, f)),
        _ => {}
    }
}

/// Mutates a multi-line document: some lines mutated, lines dropped, duplicated, swapped or
/// spliced from other documents, and sometimes the whole text cut (a torn tail).
pub fn mutate_document(rng: &mut Rng, doc: &[u8], lines_pool: &[Vec<u8>]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = doc.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let n = lines.len();
        match rng.below(8) {
            0..=3 => {
                let i = rng.below(n);
                lines[i] = mutate(rng, &lines[i], lines_pool);
            }
            4 => {
                if n > 1 {
                    lines.remove(rng.below(n));
                }
            }
            5 => {
                let i = rng.below(n);
                let copy = lines[i].clone();
                lines.insert(rng.below(n + 1), copy);
            }
            6 => {
                let (i, j) = (rng.below(n), rng.below(n));
                lines.swap(i, j);
            }
            _ => {
                if let Some(other) = rng.pick(lines_pool) {
                    lines.insert(rng.below(n + 1), other.clone());
                }
            }
        }
    }
    let mut out = lines.join(&b'\n');
    if rng.one_in(6) {
        let at = rng.below(out.len() + 1);
        out.truncate(at);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutations() {
        let seeds = vec![br#"{"type":"x","n":[1,2,{"a":"b"}]}"#.to_vec()];
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..50).map(|_| mutate(&mut rng, &seeds[0], &seeds)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn mutations_change_the_input_most_of_the_time() {
        let seed = br#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}"#;
        let mut rng = Rng::new(1);
        let changed =
            (0..1000).filter(|_| mutate(&mut rng, seed, &[seed.to_vec()]) != seed).count();
        assert!(changed > 950, "only {changed} of 1000 mutations changed the input");
    }
}
