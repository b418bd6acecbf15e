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
    /// Parses `host:port` or `[v6]:port` (the authority of a CONNECT or an absolute URL): a
    /// name is lower-cased without its trailing dot, an IP literal written in its canonical
    /// form (so `[0::1]` and `[::1]` are one destination).
    pub fn parse(authority: &str, default_port: Option<u16>) -> Result<Destination, EgressError> {
        let bad = || EgressError::BadDestination(authority.to_owned());
        let (host, port, bracketed) = if let Some(rest) = authority.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(bad)?;
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port), true),
                None if after.is_empty() => (host, None, true),
                None => return Err(bad()),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port), false),
                None => (authority, None, false),
            }
        };
        let port = match port {
            // `u16::from_str` takes a leading `+`; a port is digits only.
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u16>().map_err(|_| bad())?
            }
            Some(_) => return Err(bad()),
            None => default_port.ok_or_else(bad)?,
        };
        if port == 0 {
            return Err(bad());
        }
        let host = match host.parse::<IpAddr>() {
            // An IPv6 literal only in brackets, an IPv4 one never.
            Ok(ip @ IpAddr::V6(_)) if bracketed => ip.to_string(),
            Ok(ip @ IpAddr::V4(_)) if !bracketed => ip.to_string(),
            Ok(_) => return Err(bad()),
            Err(_) if bracketed => return Err(bad()),
            Err(_) => name(host).ok_or_else(bad)?,
        };
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

/// `text` as a host name (lower case, no trailing dot), if it is one: labels of letters, digits,
/// `-` and `_`, 1–63 bytes each, 253 in all, the last not all digits (`2130706433` or `127.1`
/// would be an address to some resolvers).
fn name(text: &str) -> Option<String> {
    let host = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
    let labels_ok = host.split('.').all(|label| {
        (1..=63).contains(&label.len())
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    let last_numeric =
        host.rsplit('.').next().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    (labels_ok && !last_numeric && host.len() <= 253).then_some(host)
}

/// One allowed destination.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// This host (a name or an IP literal) on these ports.
    Exact { host: String, ports: Vec<u16> },
    /// Any subdomain of `suffix` (not `suffix` itself) on these ports.
    Subdomains { suffix: String, ports: Vec<u16> },
}

impl std::fmt::Display for Entry {
    /// The entry as it parses back: `host`, `host:port`, `*.suffix[:port]`, `[v6]:port`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (prefix, host, ports) = match self {
            Entry::Exact { host, ports } => ("", host, ports),
            Entry::Subdomains { suffix, ports } => ("*.", suffix, ports),
        };
        let host = match host.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => format!("[{host}]"),
            _ => host.clone(),
        };
        match ports.as_slice() {
            [port] => write!(f, "{prefix}{host}:{port}"),
            _ => write!(f, "{prefix}{host}"),
        }
    }
}

/// The destinations an agent may reach. Names match case-insensitively, a trailing dot ignored;
/// an entry without a port allows 443 and 80; an IP literal must name its port.
///
/// It (de)serializes as its list of entries (`["api.example.com", "*.example.org:8443"]`), and
/// deserializing validates each as [`AllowList::parse`] does.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct AllowList {
    entries: Vec<Entry>,
}

impl AllowList {
    /// Parses entries like `api.example.com`, `example.com:8443`, `*.example.com`,
    /// `127.0.0.1:41234`, `[::1]:41234`; the first bad one is refused, saying why.
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
                    && dest
                        .host
                        .strip_suffix(suffix.as_str())
                        .and_then(|label| label.strip_suffix('.'))
                        .is_some_and(|label| !label.is_empty())
            }
        })
    }

    /// Whether `dest` is on the list as an exact IP literal (which may then be on loopback).
    pub fn names_address(&self, dest: &Destination) -> bool {
        dest.ip().is_some() && self.permits(dest)
    }

    /// The entries, each as it parses back.
    pub fn entries(&self) -> Vec<String> {
        self.entries.iter().map(Entry::to_string).collect()
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

impl TryFrom<Vec<String>> for AllowList {
    type Error = EgressError;

    fn try_from(entries: Vec<String>) -> Result<AllowList, EgressError> {
        AllowList::parse(entries)
    }
}

impl From<AllowList> for Vec<String> {
    fn from(list: AllowList) -> Vec<String> {
        list.entries()
    }
}

fn parse_entry(text: &str) -> Result<Entry, EgressError> {
    let bad = |why: &str| EgressError::BadEntry { entry: text.to_owned(), why: why.to_owned() };
    if text.is_empty() {
        return Err(bad("empty"));
    }
    if let Some(suffix) = text.strip_prefix("*.") {
        let dest = Destination::parse(suffix, Some(443))
            .map_err(|_| bad("a wildcard needs a domain name[:port] after `*.`"))?;
        if dest.ip().is_some() {
            return Err(bad("a wildcard needs a domain name after `*.`, not an address"));
        }
        return Ok(Entry::Subdomains { suffix: dest.host, ports: ports(suffix, dest.port) });
    }
    if text.contains('*') {
        return Err(bad("`*` only as a whole first label (`*.example.com`)"));
    }
    let dest = Destination::parse(text, Some(443)).map_err(|_| {
        bad("not host[:port] (a name, an IPv4 address or a bracketed IPv6 one; a port 1-65535)")
    })?;
    if dest.ip().is_some() && !has_port(text) {
        return Err(bad("an IP address must name its port"));
    }
    Ok(Entry::Exact { ports: ports(text, dest.port), host: dest.host })
}

/// The ports an entry allows: the one it names, else 443 and 80.
fn ports(text: &str, port: u16) -> Vec<u16> {
    if has_port(text) { vec![port] } else { vec![443, 80] }
}

fn has_port(text: &str) -> bool {
    match text.strip_prefix('[') {
        Some(rest) => rest.split_once("]:").is_some(),
        None => text.contains(':'),
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

    #[test]
    fn literals_are_canonical_and_numeric_names_are_not_names() {
        let list = AllowList::parse(["[0:0::1]:4000", "[::FFFF:10.0.0.1]:80"]).unwrap();
        assert!(list.permits(&dest("[::1]:4000")));
        assert!(list.permits(&dest("[::ffff:10.0.0.1]:80")));
        for bad in ["127.1:80", "2130706433:80", "[127.0.0.1]:80", "::1:80", "a:+80", "a..b:80"] {
            assert!(Destination::parse(bad, None).is_err(), "{bad}");
        }
        assert_eq!(dest("1.2.3.4.example:80").host, "1.2.3.4.example");
        assert!(Destination::parse(&format!("{}.test:80", "a".repeat(64)), None).is_err());
    }

    #[test]
    fn it_serializes_as_its_entries_and_deserializing_validates() {
        let list = AllowList::parse(["API.example.com.", "*.example.org:8443", "[::1]:9"]).unwrap();
        let json = serde_json::to_string(&list).unwrap();
        assert_eq!(json, r#"["api.example.com","*.example.org:8443","[::1]:9"]"#);
        assert_eq!(serde_json::from_str::<AllowList>(&json).unwrap(), list);
        for bad in [r#"["*"]"#, r#"[""]"#, r#"["10.0.0.1"]"#, r#"{"entries":[]}"#] {
            assert!(serde_json::from_str::<AllowList>(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics_and_what_parses_round_trips(entry in "\\PC{0,40}|[*a-zA-Z0-9.:\\[\\]-]{1,30}") {
            if let Ok(list) = AllowList::parse([&entry]) {
                proptest::prop_assert_eq!(AllowList::parse(list.entries()).unwrap(), list);
            }
        }

        #[test]
        fn a_wildcard_never_permits_its_apex_nor_another_domain(
            suffix in "[a-z]{1,8}(\\.[a-z]{1,8}){0,2}",
            label in "[a-z0-9-]{1,10}",
            other in "[a-z]{1,8}",
            port in proptest::prop_oneof![proptest::strategy::Just(443u16), proptest::strategy::Just(80u16)],
        ) {
            let list = AllowList::parse([format!("*.{suffix}")]).unwrap();
            let sub = Destination { host: format!("{label}.{suffix}"), port };
            proptest::prop_assert!(list.permits(&sub));
            let apex = Destination { host: suffix.clone(), port };
            proptest::prop_assert!(!list.permits(&apex));
            let glued = Destination { host: format!("{other}{suffix}"), port };
            proptest::prop_assert!(!list.permits(&glued));
        }


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
