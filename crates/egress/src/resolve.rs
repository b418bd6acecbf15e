//! Where a destination is: names resolved on the host (or from fixed answers in tests), and
//! which addresses are this machine's own — never reached through a name.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::allow::Destination;

/// How names are resolved.
#[derive(Debug, Clone, Default)]
pub enum Resolver {
    /// The host's resolver (`tokio::net::lookup_host`).
    #[default]
    System,
    /// Fixed answers (tests); an unknown name does not resolve.
    Fixed(HashMap<String, Vec<IpAddr>>),
}

impl Resolver {
    /// The addresses `dest`'s name has (its own address when it is a literal).
    pub async fn resolve(&self, dest: &Destination) -> std::io::Result<Vec<IpAddr>> {
        if let Some(ip) = dest.ip() {
            return Ok(vec![ip]);
        }
        match self {
            Resolver::System => {
                let found = tokio::net::lookup_host((dest.host.as_str(), dest.port)).await?;
                Ok(found.map(|a| a.ip()).collect())
            }
            Resolver::Fixed(map) => map
                .get(&dest.host)
                .cloned()
                .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name")),
        }
    }
}

/// Whether `ip` is this machine's own, link-local, unspecified or multicast: where a name must
/// never lead (DNS rebinding onto the host's services), though a listed literal may.
pub fn is_own(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                // 0.0.0.0/8 is "this network": Linux connects 0.x.y.z to the host itself.
                || v4.octets()[0] == 0
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unicast_link_local()
                || v6.to_ipv4_mapped().is_some_and(|v4| is_own(&IpAddr::V4(v4)))
                || v6.to_ipv4().is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_addresses_are_loopback_link_local_and_the_like() {
        for own in [
            "127.0.0.1",
            "127.9.9.9",
            "169.254.1.1",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
        ] {
            assert!(is_own(&own.parse().unwrap()), "{own}");
        }
        for outside in ["10.1.2.3", "93.184.216.34", "2001:db8::1", "::ffff:10.0.0.1"] {
            assert!(!is_own(&outside.parse().unwrap()), "{outside}");
        }
    }

    #[tokio::test]
    async fn fixed_answers_resolve_only_their_names_and_literals_are_themselves() {
        let ip: IpAddr = "10.0.0.7".parse().unwrap();
        let resolver = Resolver::Fixed(HashMap::from([("a.test".to_owned(), vec![ip])]));
        let at = |text: &str| Destination::parse(text, None).unwrap();
        assert_eq!(resolver.resolve(&at("a.test:80")).await.unwrap(), [ip]);
        assert!(resolver.resolve(&at("b.test:80")).await.is_err());
        assert_eq!(
            resolver.resolve(&at("[::1]:80")).await.unwrap(),
            ["::1".parse::<IpAddr>().unwrap()]
        );
    }
}
