//! Names a session's agent program may reach for a while because a fetch tool call to them was
//! allowed (Claude Code's `WebFetch`, which the CLI itself makes, not a command): the person's or
//! a rule's "allow" of the call is also the egress proxy's, for that name only.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use nucleic_egress::Destination;
use nucleic_protocol::ApprovalRequested;

/// How long an allowed fetch's name stays reachable (the CLI fetches at once; redirects on the
/// same name follow within it).
pub(crate) const FETCH_GRANT: Duration = Duration::from_secs(120);

/// The tools whose calls the agent program itself makes over the network, with the input field
/// holding the URL.
const FETCH_TOOLS: &[(&str, &str)] = &[("WebFetch", "url")];

/// One session's granted names, each until its deadline.
#[derive(Debug, Default)]
pub(crate) struct FetchGrants {
    granted: Mutex<Vec<(Destination, Instant)>>,
}

impl FetchGrants {
    /// Grants the name `request` fetches, when it is an allowed fetch of a name (never an IP
    /// literal or `localhost`: those stay for the project's sandbox list to name).
    pub(crate) fn allowing(&self, request: &ApprovalRequested) {
        let Some(dest) = fetched(request) else { return };
        if let Ok(mut granted) = self.granted.lock() {
            let now = Instant::now();
            granted.retain(|(d, until)| *until > now && *d != dest);
            granted.push((dest, now + FETCH_GRANT));
        }
    }

    /// Whether `dest` is granted now.
    pub(crate) fn permits(&self, dest: &Destination) -> bool {
        let now = Instant::now();
        self.granted.lock().is_ok_and(|g| g.iter().any(|(d, until)| d == dest && *until > now))
    }
}

/// The destination a fetch tool call reaches: `http(s)://name[:port]/…` of its URL field.
fn fetched(request: &ApprovalRequested) -> Option<Destination> {
    let (_, field) = FETCH_TOOLS.iter().find(|(tool, _)| *tool == request.tool_name)?;
    let url = request.input.get(field)?.as_str()?;
    let (rest, port) = match url.split_once("://")? {
        (scheme, rest) if scheme.eq_ignore_ascii_case("https") => (rest, 443),
        (scheme, rest) if scheme.eq_ignore_ascii_case("http") => (rest, 80),
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    // Credentials in the URL are not part of where it goes.
    let authority = authority.rsplit_once('@').map_or(authority, |(_, at)| at);
    let dest = Destination::parse(authority, Some(port)).ok()?;
    (dest.ip().is_none() && dest.host != "localhost" && !dest.host.ends_with(".localhost"))
        .then_some(dest)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn fetch(tool: &str, url: &str) -> ApprovalRequested {
        ApprovalRequested {
            request_id: "r".into(),
            tool_call_id: None,
            tool_name: tool.into(),
            input: json!({"url": url, "prompt": "p"}),
            description: None,
            blocked_path: None,
            risk: None,
            risk_reasons: Vec::new(),
        }
    }

    fn dest(authority: &str) -> Destination {
        Destination::parse(authority, None).unwrap()
    }

    #[test]
    fn an_allowed_fetch_grants_its_name_and_port_only() {
        let grants = FetchGrants::default();
        grants.allowing(&fetch("WebFetch", "https://u:p@Docs.Example.com/a?b#c"));
        grants.allowing(&fetch("WebFetch", "http://other.test:8080"));
        assert!(grants.permits(&dest("docs.example.com:443")));
        assert!(grants.permits(&dest("other.test:8080")));
        assert!(!grants.permits(&dest("docs.example.com:80")));
        assert!(!grants.permits(&dest("example.com:443")));
        assert!(!grants.permits(&dest("other.test:80")));
    }

    #[test]
    fn literals_localhost_other_schemes_and_other_tools_grant_nothing() {
        let grants = FetchGrants::default();
        for url in [
            "http://127.0.0.1:7777/api",
            "http://[::1]/",
            "http://10.0.0.1/",
            "http://localhost:3000/",
            "http://app.localhost/",
            "ftp://files.test/x",
            "docs.test/x",
        ] {
            grants.allowing(&fetch("WebFetch", url));
        }
        grants.allowing(&fetch("Bash", "https://bash.test/"));
        assert!(grants.granted.lock().unwrap().is_empty());
    }

    #[test]
    fn a_grant_ends_at_its_deadline() {
        let grants = FetchGrants::default();
        grants.allowing(&fetch("WebFetch", "https://late.test/"));
        let late = dest("late.test:443");
        grants.granted.lock().unwrap()[0].1 = Instant::now();
        assert!(!grants.permits(&late));
    }
}
