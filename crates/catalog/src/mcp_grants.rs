//! MCP grants: named MCP principals, their scopes, the session they are the agent of, and the
//! SHA-256 of their credential (never the credential).

use nucleic_protocol::{McpGrantSummary, McpScope};
use rusqlite::{OptionalExtension, Row, params};

use crate::Catalog;
use crate::error::{CatalogError, Result, SqlContext};

/// A grant to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMcpGrant {
    pub name: String,
    pub scopes: Vec<McpScope>,
    pub session_id: Option<String>,
    /// The projects it covers (none: every project).
    pub project_ids: Option<Vec<String>>,
    /// SHA-256 of the credential.
    pub credential_sha256: Vec<u8>,
    pub granted_at: i64,
}

const COLUMNS: &str = "name, scopes, session_id, granted_at, revoked_at, projects";

fn from_row(row: &Row<'_>) -> rusqlite::Result<McpGrantSummary> {
    let scopes: String = row.get(1)?;
    Ok(McpGrantSummary {
        name: row.get(0)?,
        // A name this build does not know is dropped: a grant never gains a scope by it.
        scopes: scopes.split(',').filter_map(McpScope::parse).collect(),
        session_id: row.get(2)?,
        // An empty list stays a list: a grant never widens to every project by a bad row.
        project_ids: row
            .get::<_, Option<String>>(5)?
            .map(|ids| ids.split(',').filter(|id| !id.is_empty()).map(str::to_owned).collect()),
        granted_at: row.get(3)?,
        revoked_at: row.get(4)?,
    })
}

fn scope_list(scopes: &[McpScope]) -> String {
    scopes.iter().map(|s| s.name()).collect::<Vec<_>>().join(",")
}

impl Catalog {
    /// Records a grant; a name used before (even revoked) is refused.
    pub fn add_mcp_grant(&self, grant: &NewMcpGrant) -> Result<McpGrantSummary> {
        let n = self
            .conn()
            .execute(
                "INSERT INTO mcp_grants \
                 (name, scopes, session_id, credential_sha256, granted_at, projects) \
                 VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO NOTHING",
                params![
                    grant.name,
                    scope_list(&grant.scopes),
                    grant.session_id,
                    grant.credential_sha256,
                    grant.granted_at,
                    grant.project_ids.as_ref().map(|ids| ids.join(","))
                ],
            )
            .ctx("add MCP grant")?;
        if n == 0 {
            return Err(CatalogError::DuplicateMcpGrant { name: grant.name.clone() });
        }
        Ok(McpGrantSummary {
            name: grant.name.clone(),
            scopes: grant.scopes.clone(),
            session_id: grant.session_id.clone(),
            project_ids: grant.project_ids.clone(),
            granted_at: grant.granted_at,
            revoked_at: None,
        })
    }

    /// The grant whose credential hashes to `sha256` (revoked or not).
    pub fn mcp_grant_by_credential(&self, sha256: &[u8]) -> Result<Option<McpGrantSummary>> {
        self.conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM mcp_grants WHERE credential_sha256 = ?"
            ))
            .and_then(|mut stmt| stmt.query_row([sha256], from_row).optional())
            .ctx("read MCP grant")
    }

    /// The grant named `name` (revoked or not).
    pub fn mcp_grant(&self, name: &str) -> Result<Option<McpGrantSummary>> {
        self.conn()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM mcp_grants WHERE name = ?"))
            .and_then(|mut stmt| stmt.query_row([name], from_row).optional())
            .ctx("read MCP grant")
    }

    /// Every grant, revoked ones included, in the order granted.
    pub fn list_mcp_grants(&self) -> Result<Vec<McpGrantSummary>> {
        self.conn()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM mcp_grants ORDER BY granted_at, name"))
            .and_then(|mut stmt| stmt.query_map([], from_row)?.collect())
            .ctx("list MCP grants")
    }

    /// Revokes the grant named `name` at `at` (revoking again keeps the first time).
    pub fn revoke_mcp_grant(&self, name: &str, at: i64) -> Result<()> {
        let n = self
            .conn()
            .execute(
                "UPDATE mcp_grants SET revoked_at = COALESCE(revoked_at, ?) WHERE name = ?",
                params![at, name],
            )
            .ctx("revoke MCP grant")?;
        if n == 0 {
            return Err(CatalogError::McpGrantNotFound { name: name.to_owned() });
        }
        Ok(())
    }

    /// Revokes every grant not yet revoked (a rotated token); returns how many.
    pub fn revoke_all_mcp_grants(&self, at: i64) -> Result<usize> {
        self.conn()
            .execute("UPDATE mcp_grants SET revoked_at = ? WHERE revoked_at IS NULL", params![at])
            .ctx("revoke all MCP grants")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_found_by_its_credential_hash_once_and_stays_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("c.db")).unwrap();
        let grant = NewMcpGrant {
            name: "orchestrator".into(),
            scopes: vec![McpScope::Observe, McpScope::Start],
            session_id: Some("s1".into()),
            project_ids: Some(vec!["p1".into(), "p2".into()]),
            credential_sha256: vec![7; 32],
            granted_at: 1,
        };
        catalog.add_mcp_grant(&grant).unwrap();
        let found = catalog.mcp_grant_by_credential(&[7; 32]).unwrap().unwrap();
        assert_eq!(found.scopes, vec![McpScope::Observe, McpScope::Start]);
        assert_eq!(found.session_id.as_deref(), Some("s1"));
        assert_eq!(found.project_ids, Some(vec!["p1".into(), "p2".into()]));
        assert_eq!(catalog.mcp_grant_by_credential(&[8; 32]).unwrap(), None);
        // The same name again (other credential, more scopes) is refused.
        let again =
            NewMcpGrant { credential_sha256: vec![9; 32], scopes: McpScope::ALL.to_vec(), ..grant };
        assert!(matches!(
            catalog.add_mcp_grant(&again),
            Err(CatalogError::DuplicateMcpGrant { .. })
        ));
        catalog.revoke_mcp_grant("orchestrator", 5).unwrap();
        catalog.revoke_mcp_grant("orchestrator", 9).unwrap();
        assert_eq!(catalog.mcp_grant("orchestrator").unwrap().unwrap().revoked_at, Some(5));
        assert!(matches!(
            catalog.add_mcp_grant(&again),
            Err(CatalogError::DuplicateMcpGrant { .. })
        ));
        assert!(matches!(
            catalog.revoke_mcp_grant("nobody", 1),
            Err(CatalogError::McpGrantNotFound { .. })
        ));
    }
}
