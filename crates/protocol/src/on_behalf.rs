//! Who a connection carrying the host's token acts for (`hello.onBehalfOf`): the shape of the
//! name it is recorded under, so it reads as a person of a service and never as another kind
//! of principal.

/// Longest `onBehalfOf` name, in bytes.
pub const MAX_ON_BEHALF_OF: usize = 200;

/// Services an `onBehalfOf` name may not claim: they are the host's own kinds of principal.
const RESERVED: &[&str] = &["mcp", "device", "token"];

/// Why `name` cannot be an `onBehalfOf` name, or `None` when it can: `<service>:<person>`,
/// the service lowercase letters, digits or `-` (not `mcp`, `device`, `token`), the person
/// without spaces or control characters, at most [`MAX_ON_BEHALF_OF`] bytes in all.
pub fn on_behalf_of_refused(name: &str) -> Option<String> {
    if name.len() > MAX_ON_BEHALF_OF {
        return Some(format!("onBehalfOf is over {MAX_ON_BEHALF_OF} bytes"));
    }
    let Some((service, person)) = name.split_once(':') else {
        return Some("onBehalfOf must be <service>:<person> (e.g. telegram:12345)".into());
    };
    let service_ok = !service.is_empty()
        && service.len() <= 20
        && service.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !service_ok {
        return Some(format!(
            "onBehalfOf's service {service:?} must be 1-20 lowercase letters, digits or -"
        ));
    }
    if RESERVED.contains(&service) {
        return Some(format!("onBehalfOf may not name a {service}: principal"));
    }
    if person.is_empty() || person.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(
            "onBehalfOf's person must be non-empty, without spaces or control characters".into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_and_a_person_pass_and_everything_else_says_why() {
        assert_eq!(on_behalf_of_refused("telegram:12345"), None);
        assert_eq!(on_behalf_of_refused("matrix:@ana:example.org"), None);
        for bad in [
            "telegram",
            ":12345",
            "telegram:",
            "Telegram:1",
            "mcp:planner",
            "device:abc",
            "token:x",
            "telegram:ana smith",
            "telegram:ana\u{1b}[2J",
            "telegram:a\nb",
        ] {
            assert!(on_behalf_of_refused(bad).is_some(), "{bad:?} passed");
        }
        let long = format!("telegram:{}", "x".repeat(MAX_ON_BEHALF_OF));
        assert!(on_behalf_of_refused(&long).unwrap().contains("bytes"));
    }
}
