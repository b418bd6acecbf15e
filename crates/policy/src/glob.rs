//! Wildcard matching: `*` in command patterns, `*`, `**` and `?` in path patterns.

/// Matches `text` against `pattern` where `*` matches any run of characters (spaces and
/// slashes included) and everything else is literal. Linear-time two-pointer algorithm.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches one path component against a component pattern (`*` and `?`, no slashes).
pub fn component(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = name.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches path components against pattern components, where a `**` component matches zero
/// or more components. Bounded: memoised over (pattern index, path index).
pub fn components(pattern: &[&str], path: &[&str]) -> bool {
    let mut memo = vec![None; (pattern.len() + 1) * (path.len() + 1)];
    components_at(pattern, path, 0, 0, &mut memo)
}

fn components_at(
    pattern: &[&str],
    path: &[&str],
    pi: usize,
    ti: usize,
    memo: &mut Vec<Option<bool>>,
) -> bool {
    let key = pi * (path.len() + 1) + ti;
    if let Some(done) = memo[key] {
        return done;
    }
    let result = match pattern.get(pi) {
        None => ti == path.len(),
        Some(&"**") => {
            components_at(pattern, path, pi + 1, ti, memo)
                || (ti < path.len() && components_at(pattern, path, pi, ti + 1, memo))
        }
        Some(p) => {
            ti < path.len()
                && component(p, path[ti])
                && components_at(pattern, path, pi + 1, ti + 1, memo)
        }
    };
    memo[key] = Some(result);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_matches_runs_including_spaces() {
        assert!(wildcard("git * main", "git push origin main"));
        assert!(wildcard("npm run *", "npm run test"));
        assert!(!wildcard("npm run *", "npx run test"));
        assert!(wildcard("*", ""));
        assert!(!wildcard("ls", "ls -la"));
    }

    #[test]
    fn path_components_with_double_star() {
        assert!(components(&["src", "**", "*.rs"], &["src", "a", "b", "c.rs"]));
        assert!(components(&["src", "**", "*.rs"], &["src", "c.rs"]));
        assert!(!components(&["src", "*.rs"], &["src", "a", "c.rs"]));
        assert!(components(&["etc", "*"], &["etc", "passwd"]));
    }
}
