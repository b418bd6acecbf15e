//! The allow-list: which destinations (`host:port`) an agent may reach, and the destination a
//! request names.

use std::net::IpAddr;

use crate::error::EgressError;

/// Where a request wants to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// A lower-case name without a trailing dot, or an IP literal (IPv6 without brackets).
    pub host: String,
    pub port: u16,
}

impl Destination {
    /// Parses `host:port` or `[v6]:port` (the authority of a CONNECT or an absolute URL).
    pub fn parse(authority: &str, default_port: Option<u16>) -> Result<Destination, EgressError> {
        let bad = || EgressError::BadDestination(authority.to_owned());
        let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(bad)?;
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => return Err(bad()),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| bad())?,
            None => default_port.ok_or_else(bad)?,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let valid_name =
            host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
        if host.is_empty() || port == 0 || !(valid_name || host.parse::<IpAddr>().is_ok()) {
            return Err(bad());
        }
        Ok(Destination { host, port })
    }

    /// The destination's address when it is an IP literal.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.ip() {
            Some(IpAddr::V6(_)) => write!(f, "[{}]:{}", self.host, self.port),
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// One allowed destination.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Entry {
    /// This host (a name or an IP literal) on these ports.
    Exact { host: String, ports: Vec<u16> },
    /// Any subdomain of `suffix` (not `suffix` itself) on these ports.
    Subdomains { suffix: String, ports: Vec<u16> },
}

/// The destinations an agent may reach. Names match case-insensitively, a trailing dot ignored;
/// an entry without a port allows 443 and 80; an IP literal must name its port.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl AllowList {
    /// Parses entries like `api.example.com`, `example.com:8443`, `*.example.com`,
    /// `127.0.0.1:41234`, `[::1]:41234`.
    pub fn parse<I, S>(entries: I) -> Result<AllowList, EgressError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list = AllowList::default();
        for entry in entries {
            list.entries.push(parse_entry(entry.as_ref().trim())?);
        }
        Ok(list)
    }

    /// Whether `dest` is on the list.
    pub fn permits(&self, dest: &Destination) -> bool {
        self.entries.iter().any(|entry| match entry {
            Entry::Exact { host, ports } => *host == dest.host && ports.contains(&dest.port),
            Entry::Subdomains { suffix, ports } => {
                ports.contains(&dest.port)
                    && dest.ip().is_none()
                    && dest.host.len() > suffix.len() + 1
                    && dest.host.ends_with(suffix.as_str())
                    && dest.host.as_bytes()[dest.host.len() - suffix.len() - 1] == b'.'
            }
        })
    }

    /// Whether `dest` is on the list as an exact IP literal (which may then be on loopback).
    pub fn names_address(&self, dest: &Destination) -> bool {
        dest.ip().is_some() && self.permits(dest)
    }

    /// How many entries it has.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it allows nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn parse_entry(text: &str) -> Result<Entry, EgressError> {
    let bad = |why: &str| EgressError::BadEntry { entry: text.to_owned(), why: why.to_owned() };
    if text.is_empty() {
        return Err(bad("empty"));
    }
    if let Some(suffix) = text.strip_prefix("*.") {
        let dest = Destination::parse(suffix, Some(443)).map_err(|_| bad("not a domain"))?;
        if dest.ip().is_some() || !dest.host.contains('.') && dest.host.len() < 2 {
            return Err(bad("a wildcard needs a domain after `*.`"));
        }
        let ports = if has_port(suffix) { vec![dest.port] } else { vec![443, 80] };
        return Ok(Entry::Subdomains { suffix: dest.host, ports });
    }
    if text.contains('*') {
        return Err(bad("`*` only as a whole first label (`*.example.com`)"));
    }
    let dest = Destination::parse(text, Some(443)).map_err(|_| bad("not host[:port]"))?;
    if dest.ip().is_some() && !has_port(text) {
        return Err(bad("an IP address must name its port"));
    }
    let ports = if has_port(text) { vec![dest.port] } else { vec![443, 80] };
    Ok(Entry::Exact { host: dest.host, ports })
}

fn has_port(text: &str) -> bool {
    match text.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").is_some(),
        None => text.matches(':').count() == 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(text: &str) -> Destination {
        Destination::parse(text, None).unwrap()
    }

    #[test]
    fn names_match_without_case_or_trailing_dot_on_their_ports() {
        let list = AllowList::parse(["API.example.com", "other.test:8443"]).unwrap();
        assert!(list.permits(&dest("api.example.com:443")));
        assert!(list.permits(&dest("api.example.com.:80")));
        assert!(!list.permits(&dest("api.example.com:8443")));
        assert!(list.permits(&dest("other.test:8443")));
        assert!(!list.permits(&dest("other.test:443")));
        assert!(!list.permits(&dest("evil-api.example.com:443")));
    }

    #[test]
    fn a_wildcard_allows_subdomains_not_the_apex_nor_lookalikes() {
        let list = AllowList::parse(["*.example.com"]).unwrap();
        assert!(list.permits(&dest("a.example.com:443")));
        assert!(list.permits(&dest("a.b.example.com:80")));
        assert!(!list.permits(&dest("example.com:443")));
        assert!(!list.permits(&dest("badexample.com:443")));
    }

    #[test]
    fn addresses_match_only_when_listed_with_their_port() {
        let list = AllowList::parse(["127.0.0.1:4000", "[::1]:4001"]).unwrap();
        assert!(
            list.permits(&dest("127.0.0.1:4000")) && list.names_address(&dest("127.0.0.1:4000"))
        );
        assert!(!list.permits(&dest("127.0.0.1:4001")));
        assert!(list.permits(&dest("[::1]:4001")));
        assert!(!list.permits(&dest("[::1]:4000")));
    }

    #[test]
    fn bad_entries_are_refused_saying_why() {
        for (entry, why) in [
            ("", "empty"),
            ("*", "`*`"),
            ("*.", "domain"),
            ("a*.example.com", "`*`"),
            ("10.0.0.1", "port"),
            ("host:99999", "host[:port]"),
            ("bad host", "host[:port]"),
        ] {
            let err = AllowList::parse([entry]).unwrap_err().to_string();
            assert!(err.contains(why), "{entry:?}: {err}");
        }
    }

    #[test]
    fn destinations_parse_names_and_literals() {
        assert_eq!(dest("[::1]:80").to_string(), "[::1]:80");
        assert_eq!(dest("Example.COM.:443").host, "example.com");
        assert!(Destination::parse("example.com", None).is_err());
        assert_eq!(Destination::parse("example.com", Some(80)).unwrap().port, 80);
        assert!(Destination::parse("ex ample:1", None).is_err());
        assert!(Destination::parse("[::1", None).is_err());
        assert!(Destination::parse("a:0", None).is_err());
    }

    proptest::proptest! {
        #[test]
        fn no_destination_off_a_names_list_is_permitted(host in "[a-z]{1,12}(\\.[a-z]{1,8}){0,3}", port: u16) {
            let list = AllowList::parse(["allowed.example:443", "*.allowed.test"]).unwrap();
            let dest = Destination { host: host.clone(), port };
            let expected = (host == "allowed.example" && port == 443)
                || ((port == 443 || port == 80) && host.ends_with(".allowed.test"));
            proptest::prop_assert_eq!(list.permits(&dest), expected);
        }
    }
}
