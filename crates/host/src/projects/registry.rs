//! Projects: registering git repositories, their settings as clients see them, their branches.

use std::path::{Path, PathBuf};

use nucleic_catalog::{NewProject, ProjectRow, ProjectSettings};
use nucleic_git::Repo;
use nucleic_protocol::ProjectSummary;

use crate::agents::backends::DEFAULT_BACKEND;
use crate::context::Context;
use crate::error::{HostError, blocking};

impl Context {
    /// Registers a git repository. Refuses a path that is not a repository and a repository
    /// that is already registered (same canonical root).
    pub async fn add_project(
        &self,
        path: &str,
        name: Option<String>,
        settings: impl FnOnce(&mut ProjectSettings) + Send + 'static,
    ) -> Result<ProjectSummary, HostError> {
        let path = PathBuf::from(path);
        let repo = blocking(move || Repo::open(&path)).await?;
        let root = repo.root().to_string_lossy().into_owned();
        let branch =
            blocking(move || repo.default_branch()).await?.unwrap_or_else(|| "main".into());
        let name = name.unwrap_or_else(|| {
            Path::new(&root)
                .file_name()
                .map_or("project".into(), |n| n.to_string_lossy().into_owned())
        });
        let mut project_settings = ProjectSettings::defaults(DEFAULT_BACKEND);
        project_settings.default_branch = branch;
        settings(&mut project_settings);
        crate::dev_loop::checks::validate_checks(&project_settings.checks)?;
        let new = NewProject {
            id: uuid::Uuid::new_v4().to_string(),
            name,
            root,
            settings: project_settings,
        };
        let row = self.catalog(move |c| c.add_project(&new)).await?;
        self.pools.wake();
        Ok(self.project_summary(&row))
    }

    pub async fn list_projects(&self) -> Result<Vec<ProjectSummary>, HostError> {
        let rows = self.catalog(|c| c.list_projects()).await?;
        Ok(rows.iter().map(|row| self.project_summary(row)).collect())
    }

    /// Sets how many worktrees the project keeps prepared (0: none; the pool empties).
    pub async fn set_pool_size(&self, id: &str, size: u32) -> Result<ProjectSummary, HostError> {
        let key = id.to_owned();
        let row = self
            .catalog(move |c| {
                let mut settings = c
                    .project(&key)?
                    .ok_or_else(|| nucleic_catalog::CatalogError::ProjectNotFound {
                        id: key.clone(),
                    })?
                    .settings;
                settings.pool_size = size;
                c.update_project_settings(&key, &settings)
            })
            .await?;
        self.pools.wake();
        Ok(self.project_summary(&row))
    }

    /// One project as clients see it.
    pub async fn project_summary_of(&self, id: &str) -> Result<ProjectSummary, HostError> {
        Ok(self.project_summary(&self.project(id).await?))
    }

    pub(crate) fn project_summary(&self, row: &ProjectRow) -> ProjectSummary {
        ProjectSummary {
            project_id: row.id.clone(),
            name: row.name.clone(),
            root: row.root.clone(),
            default_branch: row.settings.default_branch.clone(),
            default_backend: row.settings.default_backend,
            checks: row.settings.checks.clone(),
            checks_after_turn: row.settings.checks_after_turn,
            pool: self.pools.summary(row),
            disk_policy: row.settings.disk_policy,
            sandbox: row.settings.sandbox.clone(),
        }
    }

    /// A project's local branches a session could start from (most recent first) and its
    /// default branch.
    pub async fn list_branches(&self, id: &str) -> Result<(Vec<String>, String), HostError> {
        let project = self.project(id).await?;
        let root = PathBuf::from(&project.root);
        let branches = blocking(move || Repo::open(&root)?.local_branches()).await?;
        Ok((branches, project.settings.default_branch))
    }

    pub async fn rename_project(&self, id: &str, name: &str) -> Result<(), HostError> {
        let (id, name) = (id.to_owned(), name.to_owned());
        self.catalog(move |c| c.rename_project(&id, &name)).await
    }

    /// Forgets a project; refused while it has sessions that are not archived (their worktrees
    /// are never deleted silently).
    pub async fn remove_project(&self, id: &str) -> Result<(), HostError> {
        let id = id.to_owned();
        self.catalog(move |c| c.remove_project(&id)).await
    }

    pub(crate) async fn project(&self, id: &str) -> Result<ProjectRow, HostError> {
        let key = id.to_owned();
        self.catalog(move |c| c.project(&key))
            .await?
            .ok_or_else(|| HostError::NotFound(format!("project {id}")))
    }
}
