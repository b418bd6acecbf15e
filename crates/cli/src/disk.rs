//! `nucleic session disk|reclaim`, `nucleic project disk` and `nucleic gc`: what worktrees take
//! on disk, the project's worktree budget and reclaim age, and what no session needs any more.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use nucleic_protocol::{
    ClientMessage, DiskPolicy, DiskUsage, HostMessage, Intent, SessionSummary, human_bytes,
};

use nucleic_client::Client;
use nucleic_client::results::GcReport;

/// `1.2 GB (900.0 MB build output)`.
pub fn usage_text(disk: &DiskUsage) -> String {
    format!("{} ({} build output)", human_bytes(disk.bytes), human_bytes(disk.build_bytes))
}

/// The disk column of `session list`: the last measurement, or whether it was reclaimed.
pub fn list_column(s: &SessionSummary) -> String {
    match (&s.disk, s.worktree_reclaimed) {
        (_, true) => "reclaimed".to_owned(),
        (Some(disk), false) => human_bytes(disk.bytes),
        (None, false) => "-".to_owned(),
    }
}

/// `nucleic session disk <id>`: measures the worktree now.
pub async fn session_disk(daemon: &mut Client, session_id: String) -> anyhow::Result<ExitCode> {
    let disk: DiskUsage = daemon.intent_as(Intent::MeasureDisk { session_id }).await?;
    println!("{}", usage_text(&disk));
    Ok(ExitCode::SUCCESS)
}

/// `nucleic session reclaim <id>`.
pub async fn session_reclaim(daemon: &mut Client, session_id: String) -> anyhow::Result<ExitCode> {
    let event: nucleic_protocol::WorktreeReclaimed =
        daemon.intent_as(Intent::Reclaim { session_id }).await?;
    println!("{}; `nucleic session continue` or a follow-up brings it back", event.summary());
    Ok(ExitCode::SUCCESS)
}

/// `nucleic project disk <id> [--budget SIZE] [--reclaim-after AGE] [--clear]`: sets the policy
/// when asked, then shows it and what each session's worktree took when last measured.
pub async fn project_disk(
    daemon: &mut Client,
    project_id: String,
    budget: Option<String>,
    reclaim_after: Option<String>,
    clear: bool,
) -> anyhow::Result<ExitCode> {
    let message_id = daemon.id();
    let HostMessage::Projects { projects, .. } =
        daemon.request(ClientMessage::ListProjects { message_id }).await?
    else {
        bail!("the daemon did not list its projects");
    };
    let Some(project) = projects.into_iter().find(|p| p.project_id == project_id) else {
        bail!("project {project_id} not found");
    };
    let mut policy = if clear { DiskPolicy::default() } else { project.disk_policy };
    if let Some(budget) = budget {
        policy.budget_bytes = Some(parse_size(&budget)?);
    }
    if let Some(age) = reclaim_after {
        policy.reclaim_after_secs = Some(parse_age(&age)?);
    }
    if policy != project.disk_policy {
        daemon.intent(Intent::SetDiskPolicy { project_id: project_id.clone(), policy }).await?;
    }
    println!(
        "budget: {}; reclaim finished worktrees after: {}",
        policy.budget_bytes.map_or("none".to_owned(), human_bytes),
        policy.reclaim_after_secs.map_or("never".to_owned(), age_text)
    );
    let message_id = daemon.id();
    let request = ClientMessage::ListSessions {
        message_id,
        project_id: Some(project_id),
        include_archived: true,
    };
    if let HostMessage::Sessions { sessions, .. } = daemon.request(request).await? {
        let mut total = 0u64;
        for s in sessions.iter().filter(|s| s.worktree.is_some()) {
            total += s.disk.filter(|_| !s.worktree_reclaimed).map_or(0, |d| d.bytes);
            let figure = match (&s.disk, s.worktree_reclaimed) {
                (_, true) => "reclaimed".to_owned(),
                (Some(d), false) => usage_text(d),
                (None, false) => "not measured yet (`nucleic gc` measures all)".to_owned(),
            };
            println!("{}  {figure}  {}", s.session_id, s.title);
        }
        println!("total (as last measured): {}", human_bytes(total));
    }
    Ok(ExitCode::SUCCESS)
}

/// `500M`, `20G`, `1.5GB`, `2048` (bytes): powers of 1000, as shown.
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim().to_ascii_uppercase();
    let t = t.strip_suffix('B').unwrap_or(&t);
    let (number, factor) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let value: f64 = number
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .with_context(|| format!("{text:?} is not a size like 500M or 20G"))?;
    Ok((value * factor) as u64)
}

/// `90s`, `30m`, `12h`, `7d`, `2w` → seconds.
pub fn parse_age(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let unit = t.chars().last().filter(char::is_ascii_alphabetic);
    let number = if unit.is_some() { &t[..t.len() - 1] } else { t };
    let factor = match unit {
        None | Some('s') => 1,
        Some('m') => 60,
        Some('h') => 3600,
        Some('d') => 86_400,
        Some('w') => 7 * 86_400,
        Some(_) => bail!("{text:?} is not an age like 12h or 7d"),
    };
    let value: u64 = number
        .parse()
        .ok()
        .filter(|v| *v > 0)
        .with_context(|| format!("{text:?} is not an age like 12h or 7d"))?;
    value.checked_mul(factor).with_context(|| format!("{text:?} is too long"))
}

/// `7d`, `12h`, `90s` for a person.
fn age_text(secs: u64) -> String {
    match secs {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// `nucleic gc [--apply]`: worktrees no session owns, stray keepers, and finished worktrees due
/// for reclaiming (listed; removed or reclaimed with --apply).
pub async fn gc(home: &Path, apply: bool) -> anyhow::Result<ExitCode> {
    let mut daemon = crate::daemon::connect(home).await?;
    let report: GcReport = daemon.intent_as(Intent::Gc { apply }).await?;
    let (orphans, strays) = (report.orphan_worktrees, report.stray_keepers);
    if orphans.is_empty() {
        println!("no orphan worktrees");
    }
    if strays.is_empty() {
        println!("no stray keepers");
    }
    for o in orphans {
        println!("{} {}", if apply { "removed" } else { "orphan (dry run; --apply removes)" }, o);
    }
    let reclaimable = report.reclaimable_worktrees;
    if reclaimable.is_empty() {
        println!("no worktrees due for reclaiming");
    }
    for r in reclaimable {
        let what = match (apply, &r.error) {
            (true, Some(e)) => format!("not reclaimed ({e})"),
            (true, None) => "reclaimed".to_owned(),
            (false, _) => "due for reclaiming (dry run; --apply reclaims)".to_owned(),
        };
        println!(
            "{what} {} {} ({}, {} build output; {})",
            r.session_id,
            r.path.as_deref().unwrap_or_default(),
            human_bytes(r.bytes),
            human_bytes(r.build_bytes),
            r.reason,
        );
    }
    for k in strays {
        println!(
            "{} {}",
            if apply { "removed stray keeper" } else { "stray keeper (dry run; --apply removes)" },
            k
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_parse_as_shown_and_nonsense_is_refused() {
        assert_eq!(parse_size("500M").unwrap(), 500_000_000);
        assert_eq!(parse_size("1.5GB").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("2048").unwrap(), 2048);
        assert_eq!(parse_size("20g").unwrap(), 20_000_000_000);
        for bad in ["", "G", "-1G", "0", "lots", "1X"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_age("7d").unwrap(), 604_800);
        assert_eq!(parse_age("12h").unwrap(), 43_200);
        assert_eq!(parse_age("90").unwrap(), 90);
        for bad in ["", "0d", "7y", "d", "-3h"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(age_text(604_800), "7d");
        assert_eq!(age_text(5400), "90m");
    }
}
