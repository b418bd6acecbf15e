//! A project's additions to its agents' confinement (`setProjectSandbox`): paths bound back
//! read-only or writable, paths hidden, egress domains — checked before they are kept, so no
//! setting can hand an agent the machine, a home, the data dir or a credential store.

use std::path::{Component, Path, PathBuf};

use nucleic_protocol::{ProjectSandbox, ProjectSummary};

use crate::agents::confinement::homes;
use crate::context::Context;
use crate::error::HostError;

/// The most entries of each list.
const MAX_ENTRIES: usize = 64;

/// Directories of a home that hold credentials: never exposed, whatever a project says.
const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gh",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".claude",
    ".codex",
];

/// System directories a project may not make writable.
const SYSTEM_DIRS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/proc", "/sys", "/dev", "/var/lib",
];

impl Context {
    /// What project `project_id`'s agents see beyond the defaults (none for no project).
    pub(crate) async fn project_sandbox(&self, project_id: Option<&str>) -> ProjectSandbox {
        match project_id {
            Some(id) => self.project(id).await.map(|p| p.settings.sandbox).unwrap_or_default(),
            None => ProjectSandbox::default(),
        }
    }

    /// Sets project `project_id`'s additions, refused whole, saying why, when any entry would
    /// open what the confinement exists to close. Applies at each agent's next start.
    pub async fn set_project_sandbox(
        &self,
        project_id: &str,
        sandbox: ProjectSandbox,
    ) -> Result<ProjectSummary, HostError> {
        let checked = check_sandbox(&self.config.home, &homes(&self.config), sandbox)?;
        let project = self.project(project_id).await?;
        let mut settings = project.settings.clone();
        settings.sandbox = checked;
        let id = project_id.to_owned();
        let row = self.catalog(move |c| c.update_project_settings(&id, &settings)).await?;
        Ok(self.project_summary(&row))
    }
}

/// `sandbox` with its paths made canonical, or the first reason it is refused.
pub(crate) fn check_sandbox(
    data_dir: &Path,
    homes: &[PathBuf],
    sandbox: ProjectSandbox,
) -> Result<ProjectSandbox, HostError> {
    let refuse = |entry: &str, why: &str| {
        HostError::Invalid(format!("project sandbox entry {entry:?} is refused: {why}"))
    };
    for list in [&sandbox.read_only, &sandbox.writable, &sandbox.hide, &sandbox.allow_domains] {
        if list.len() > MAX_ENTRIES {
            return Err(HostError::Invalid(format!(
                "a project sandbox list has at most {MAX_ENTRIES} entries"
            )));
        }
    }
    let data_dir = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_owned());
    let exposed = |entry: &String, writable: bool| -> Result<String, HostError> {
        let path = canonical_entry(entry).map_err(|why| refuse(entry, &why))?;
        if path == Path::new("/") {
            return Err(refuse(entry, "it is the whole machine"));
        }
        if homes.iter().any(|home| home.starts_with(&path)) {
            return Err(refuse(entry, "it is a home, or holds one"));
        }
        if data_dir.starts_with(&path) || path.starts_with(&data_dir) {
            return Err(refuse(entry, "it is, holds or is inside Nucleic's data dir"));
        }
        for home in homes {
            if CREDENTIAL_STORES.iter().any(|store| {
                let store = home.join(store);
                path.starts_with(&store) || store.starts_with(&path)
            }) {
                return Err(refuse(entry, "it is, holds or is inside a credential store"));
            }
        }
        if writable
            && SYSTEM_DIRS.iter().any(|d| path.starts_with(d) || Path::new(d).starts_with(&path))
        {
            return Err(refuse(entry, "a system directory is never writable"));
        }
        Ok(path.to_string_lossy().into_owned())
    };
    let read_only =
        sandbox.read_only.iter().map(|e| exposed(e, false)).collect::<Result<_, _>>()?;
    let writable = sandbox.writable.iter().map(|e| exposed(e, true)).collect::<Result<_, _>>()?;
    let mut hide = Vec::new();
    for entry in &sandbox.hide {
        let path = canonical_entry(entry).map_err(|why| refuse(entry, &why))?;
        hide.push(path.to_string_lossy().into_owned());
    }
    nucleic_egress::AllowList::parse(&sandbox.allow_domains)
        .map_err(|e| HostError::Invalid(format!("project sandbox domains refused: {e}")))?;
    Ok(ProjectSandbox { read_only, writable, hide, allow_domains: sandbox.allow_domains })
}

/// An existing absolute path, without `..`, symlinks resolved.
fn canonical_entry(entry: &str) -> Result<PathBuf, String> {
    let path = Path::new(entry);
    if !path.is_absolute() {
        return Err("not an absolute path".into());
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err("`..` is not allowed".into());
    }
    path.canonicalize().map_err(|e| format!("cannot resolve it: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(read_only: &[&str], writable: &[&str], domains: &[&str]) -> ProjectSandbox {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        ProjectSandbox {
            read_only: owned(read_only),
            writable: owned(writable),
            hide: Vec::new(),
            allow_domains: owned(domains),
        }
    }

    #[test]
    fn what_would_undo_the_confinement_is_refused_saying_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let data = home.join(".local/share/nucleic");
        for d in [data.clone(), home.join(".ssh/keys"), root.join("cache")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let homes = [home.clone()];
        let path = |p: &Path| p.to_string_lossy().into_owned();
        for (entry, why) in [
            ("/".to_owned(), "whole machine"),
            (path(&home), "home"),
            (path(&root), "home"),
            (path(&data), "data dir"),
            (path(&home.join(".local")), "data dir"),
            (path(&home.join(".ssh/keys")), "credential"),
            ("relative/path".to_owned(), "absolute"),
            (format!("{}/../x", root.display()), "`..`"),
            (path(&root.join("absent")), "cannot resolve"),
        ] {
            let err = check_sandbox(&data, &homes, sandbox(&[&entry], &[], &[])).unwrap_err();
            assert!(err.to_string().contains(why), "{entry}: {err}");
        }
        let err = check_sandbox(&data, &homes, sandbox(&[], &["/etc"], &[])).unwrap_err();
        assert!(err.to_string().contains("system"), "{err}");
        let err = check_sandbox(&data, &homes, sandbox(&[], &[], &["*"])).unwrap_err();
        assert!(err.to_string().contains("domains"), "{err}");
    }

    #[test]
    fn ordinary_additions_are_kept_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let cache = root.join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let homes = [root.join("home")];
        let entry = format!("{}/./cache", root.display());
        let kept = check_sandbox(
            &root.join("data"),
            &homes,
            sandbox(&["/etc"], &[&entry], &["*.crates.io"]),
        )
        .unwrap();
        assert_eq!(kept.writable, vec![cache.to_string_lossy().into_owned()]);
        assert_eq!(kept.read_only, vec!["/etc".to_owned()]);
        assert_eq!(kept.allow_domains, vec!["*.crates.io".to_owned()]);
    }
}
