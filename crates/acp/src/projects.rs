//! Which registered project an editor's `cwd` belongs to: the one whose checkout (its root,
//! symlinks resolved) contains the `cwd` (symlinks resolved too), the deepest when roots nest.
//! Anything else is refused: `nucleic acp` never registers a project.

use std::path::{Path, PathBuf};

use nucleic_protocol::ProjectSummary;

/// The project holding `cwd`, or why there is none.
pub(crate) fn project_for<'a>(
    cwd: &Path,
    projects: &'a [ProjectSummary],
) -> Result<&'a ProjectSummary, String> {
    if !cwd.is_absolute() {
        return Err(format!("cwd {} is not an absolute path", cwd.display()));
    }
    let cwd =
        cwd.canonicalize().map_err(|e| format!("cwd {} cannot be resolved: {e}", cwd.display()))?;
    let mut best: Option<(&ProjectSummary, PathBuf)> = None;
    for project in projects {
        let Ok(root) = Path::new(&project.root).canonicalize() else { continue };
        let deeper =
            best.as_ref().is_none_or(|(_, r)| root.components().count() > r.components().count());
        if cwd.starts_with(&root) && deeper {
            best = Some((project, root));
        }
    }
    best.map(|(p, _)| p).ok_or_else(|| {
        let roots: Vec<&str> = projects.iter().map(|p| p.root.as_str()).collect();
        format!(
            "{} is in no Nucleic project (registered: {}); add its repository with \
             `nucleic project add PATH` first",
            cwd.display(),
            if roots.is_empty() { "none".to_owned() } else { roots.join(", ") }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(id: &str, root: &Path) -> ProjectSummary {
        serde_json::from_value(serde_json::json!({
            "projectID": id, "name": id, "root": root.to_str().unwrap(),
            "defaultBranch": "main", "defaultBackend": "simulated"
        }))
        .unwrap()
    }

    #[test]
    fn the_deepest_project_holding_the_cwd_is_chosen_and_the_rest_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("outer");
        let inner = outer.join("vendor/inner");
        let sibling = dir.path().join("outer-2");
        for d in [&inner.join("src"), &sibling] {
            std::fs::create_dir_all(d).unwrap();
        }
        let projects = [project("o", &outer), project("i", &inner)];
        assert_eq!(project_for(&outer, &projects).unwrap().project_id, "o");
        assert_eq!(project_for(&inner.join("src"), &projects).unwrap().project_id, "i");
        assert_eq!(project_for(&outer.join("vendor"), &projects).unwrap().project_id, "o");
        // A prefix of the name is not containment.
        let why = project_for(&sibling, &projects).unwrap_err();
        assert!(why.contains("in no Nucleic project"), "{why}");
        assert!(project_for(Path::new("relative"), &projects).unwrap_err().contains("absolute"));
        assert!(project_for(&outer.join("missing"), &projects).is_err());
        // A symlink inside a project pointing out of it is judged by where it points.
        std::os::unix::fs::symlink(&sibling, outer.join("escape")).unwrap();
        assert!(project_for(&outer.join("escape"), &projects).is_err());
    }
}
