//! MCP grants: the person names an MCP client and its scopes (`grantMcp`), the host answers a
//! credential once and keeps its SHA-256; a connection bearing it is that principal, with those
//! scopes and no more, until the grant is revoked (or the token rotated).

use nucleic_catalog::NewMcpGrant;
use nucleic_protocol::{MCP_CREDENTIAL_PREFIX, McpGrantSummary, McpGranted, McpGrants, McpScope};
use sha2::{Digest, Sha256};

use super::credentials::{Revocation, new_token};
use crate::api::{McpPrincipal, Principal};
use crate::clock::unix_millis;
use crate::context::Context;
use crate::error::HostError;

/// The longest grant name.
const MAX_NAME: usize = 64;

/// The label an MCP principal is recorded under (`approvalResolved.by`, `createdBy`, …).
pub fn mcp_label(name: &str) -> String {
    format!("mcp:{name}")
}

fn digest(credential: &str) -> Vec<u8> {
    Sha256::digest(credential.as_bytes()).to_vec()
}

/// A grant's name: 1 to 64 of `A-Z a-z 0-9 . _ -`.
fn check_name(name: &str) -> Result<(), HostError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(HostError::Invalid(format!(
            "an MCP grant's name is 1 to {MAX_NAME} letters, digits, '.', '_' or '-' (got {name:?})"
        )))
    }
}

/// The scopes as kept: `observe` always, each once, in order.
fn normalized(scopes: &[McpScope]) -> Vec<McpScope> {
    let mut all: Vec<McpScope> = scopes.iter().copied().chain([McpScope::Observe]).collect();
    all.sort();
    all.dedup();
    all
}

impl Context {
    /// Records a grant and answers its credential (shown this once).
    pub async fn grant_mcp(
        &self,
        name: &str,
        scopes: &[McpScope],
        session_id: Option<String>,
        project_ids: Option<Vec<String>>,
    ) -> Result<McpGranted, HostError> {
        check_name(name)?;
        let project_ids = match project_ids {
            Some(ids) => Some(self.known_projects(ids).await?),
            None => None,
        };
        if let Some(session) = &session_id {
            let key = session.clone();
            if self.catalog(move |c| c.session(&key)).await?.is_none() {
                return Err(HostError::NotFound(format!("session {session}")));
            }
        }
        let credential = format!("{MCP_CREDENTIAL_PREFIX}{}", new_token());
        let grant = NewMcpGrant {
            name: name.to_owned(),
            scopes: normalized(scopes),
            session_id,
            project_ids,
            credential_sha256: digest(&credential),
            granted_at: unix_millis(),
        };
        let grant = self.catalog(move |c| c.add_mcp_grant(&grant)).await.map_err(|e| match e {
            HostError::Catalog(nucleic_catalog::CatalogError::DuplicateMcpGrant { name }) => {
                HostError::Invalid(format!(
                    "an MCP grant named {name} exists already (revoked names are never granted again): pick another name"
                ))
            }
            other => other,
        })?;
        Ok(McpGranted { grant, credential })
    }

    /// `ids` as a grant keeps them: each a project of this host, each once, at least one.
    async fn known_projects(&self, ids: Vec<String>) -> Result<Vec<String>, HostError> {
        let mut kept: Vec<String> = Vec::with_capacity(ids.len());
        for id in ids {
            if kept.contains(&id) {
                continue;
            }
            self.project(&id).await?;
            kept.push(id);
        }
        if kept.is_empty() {
            return Err(HostError::Invalid(
                "an MCP grant of no project could see nothing: name one, or none for every project"
                    .into(),
            ));
        }
        Ok(kept)
    }

    /// Revokes the grant `name` for good and closes its connections.
    pub async fn revoke_mcp(&self, name: &str) -> Result<(), HostError> {
        let owned = name.to_owned();
        self.catalog(move |c| c.revoke_mcp_grant(&owned, unix_millis())).await.map_err(
            |e| match e {
                HostError::Catalog(nucleic_catalog::CatalogError::McpGrantNotFound { .. }) => {
                    HostError::NotFound(format!("MCP grant {name}"))
                }
                other => other,
            },
        )?;
        let _ = self.credentials.revocations.send(Revocation::Mcp(name.to_owned()));
        Ok(())
    }

    /// Every grant, revoked ones too (never a credential).
    pub async fn list_mcp_grants(&self) -> Result<McpGrants, HostError> {
        Ok(McpGrants { grants: self.catalog(|c| c.list_mcp_grants()).await? })
    }

    /// The MCP principal `credential` authenticates, if it is an unrevoked grant's.
    pub async fn mcp_principal(&self, credential: &str) -> Result<Option<Principal>, HostError> {
        if !credential.starts_with(MCP_CREDENTIAL_PREFIX) {
            return Ok(None);
        }
        let hash = digest(credential);
        let grant = self.catalog(move |c| c.mcp_grant_by_credential(&hash)).await?;
        Ok(grant.filter(|g| g.revoked_at.is_none()).map(principal_of))
    }

    /// Whether the grant `name` is still in force (after missed revocation announcements).
    pub async fn mcp_grant_active(&self, name: &str) -> Result<bool, HostError> {
        let key = name.to_owned();
        let grant = self.catalog(move |c| c.mcp_grant(&key)).await?;
        Ok(grant.is_some_and(|g| g.revoked_at.is_none()))
    }
}

fn principal_of(grant: McpGrantSummary) -> Principal {
    Principal::Mcp(McpPrincipal {
        label: mcp_label(&grant.name),
        name: grant.name,
        scopes: grant.scopes,
        session_id: grant.session_id,
        project_ids: grant.project_ids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_and_observe_is_always_held() {
        assert!(check_name("orchestrator-1.a_b").is_ok());
        for bad in ["", "a b", "x/y", "mcp:x", &"n".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            normalized(&[McpScope::Approve, McpScope::Start, McpScope::Approve]),
            vec![McpScope::Observe, McpScope::Start, McpScope::Approve]
        );
    }
}
