//! Part 4: the warm worktree pool on a 100,000-file repository (tmpfs): pooled session start,
//! the fallback path and a bare `git worktree add`, interleaved; then the pool following its
//! base moved by one commit, against a bare add.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nucleic_host::Host;

use super::*;

async fn ready(host: &Host, project: &str) -> Res<u32> {
    let summary = host.project_summary_of(project).await?;
    Ok(summary.pool.map_or(0, |p| p.ready))
}

/// Waits until the pool has `n` ready (the refill of 100k files takes seconds).
async fn wait_ready(host: &Host, project: &str, n: u32) -> Res<()> {
    let deadline = Instant::now() + Duration::from_secs(600);
    while ready(host, project).await? < n {
        if Instant::now() > deadline {
            return Err(format!("the pool did not reach {n} ready in 10 minutes").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

fn bare_add(root: &Path, path: &Path, branch: &str) -> Res<f64> {
    let t = Instant::now();
    let out = Command::new("git")
        .args(["worktree", "add", "--quiet", "-b", branch])
        .arg(path)
        .arg("HEAD")
        .current_dir(root)
        .stdin(Stdio::null())
        .output()?;
    let took = ms(t.elapsed());
    if !out.status.success() {
        return Err(format!("git worktree add: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(took)
}

/// Times one session start; stops its agent and removes its worktree afterwards (untimed), so
/// tmpfs holds a bounded number of 100k-file checkouts.
async fn timed_start(host: &Arc<Host>, project: &str, base: Option<String>) -> Res<(f64, String)> {
    let mut request = sim_session(project, "say hi");
    request.base_ref = base;
    let t = Instant::now();
    let s = host.new_session(request, "bench").await?;
    let took = ms(t.elapsed());
    wait_turns(host, &s.session_id, 1).await?;
    let _ = host.stop(&s.session_id).await;
    let path = s.worktree.map(|w| w.path).unwrap_or_default();
    Ok((took, path))
}

pub(crate) async fn pool_bench(host: &Arc<Host>, scratch: &Path, root: &Path) -> Res<()> {
    println!("\n== 4. warm worktree pool (100,000 files, tmpfs) ==");
    let path = root.to_string_lossy().into_owned();
    let project = host.add_project(&path, Some("repo-100k".into()), |s| s.pool_size = 1);
    let project = project.await?.project_id;
    host.start_pools();
    let t = Instant::now();
    wait_ready(host, &project, 1).await?;
    println!("  first pooled worktree prepared in {:.1} s (background)", t.elapsed().as_secs_f64());
    let bare_dir = scratch.join("bare-100k");
    std::fs::create_dir_all(&bare_dir)?;
    let tip = git(root, &["rev-parse", "HEAD"])?.trim().to_owned();
    let rounds = env_usize("HOST_BENCH_POOL_ROUNDS", 5);
    let (mut adds, mut pooled, mut fallback) = (Vec::new(), Vec::new(), Vec::new());
    let (mut pooled_ratio, mut fallback_ratio) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        // The pool is full, and refills only after the pooled start, so nothing it does in the
        // background overlaps the three measurements.
        wait_ready(host, &project, 1).await?;
        // The same base by its commit: no warm worktree for it, so today's path.
        let (slow_ms, slow_path) = timed_start(host, &project, Some(tip.clone())).await?;
        let wt = bare_dir.join(format!("wt_{round}"));
        let add_ms = bare_add(root, &wt, &format!("pb_{round}"))?;
        let (pool_ms, pool_path) = timed_start(host, &project, None).await?;
        for path in [wt.to_string_lossy().into_owned(), pool_path, slow_path] {
            let _ = git(root, &["worktree", "remove", "--force", "--force", &path]);
        }
        let label = if round == 0 { "warm-up".to_owned() } else { format!("round {round}") };
        println!(
            "  {label:>8}: worktree add {add_ms:7.1} ms | pooled start {pool_ms:6.1} ms | fallback start {slow_ms:7.1} ms"
        );
        if round > 0 {
            adds.push(add_ms);
            pooled.push(pool_ms);
            fallback.push(slow_ms);
            pooled_ratio.push(add_ms / pool_ms);
            fallback_ratio.push(slow_ms / add_ms);
        }
    }
    println!("  bare `git worktree add`      {} ms", spread(&adds, 1));
    println!("  pooled session start         {} ms", spread(&pooled, 1));
    println!("  fallback session start       {} ms", spread(&fallback, 1));
    let (p, f, speedup) = (median(&pooled), median(&fallback_ratio), median(&pooled_ratio));
    println!(
        "  add ÷ pooled start           {}  target ≥ 20 and pooled < 100 ms → {}",
        spread(&pooled_ratio, 1),
        if speedup >= 20.0 && p < 100.0 { "PASS" } else { "FAIL" }
    );
    println!(
        "  fallback ÷ add               {}  target ≤ 1.2 → {}",
        spread(&fallback_ratio, 2),
        if f <= 1.2 { "PASS" } else { "FAIL" }
    );

    // The base moves by one commit changing one file: the pool follows it.
    wait_ready(host, &project, 1).await?;
    let (mut refreshes, mut adds) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        let file = root.join(format!("src/a{round}/b0/f0.txt"));
        std::fs::write(&file, format!("moved {round}\n"))?;
        git(root, &["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qam", "move"])?;
        let t = Instant::now();
        host.tend_pools_now().await;
        let refresh_ms = ms(t.elapsed());
        let moved = git(root, &["rev-parse", "HEAD"])?.trim().to_owned();
        let pool_dir = root.join(".nucleic/pool");
        let followed = std::fs::read_dir(&pool_dir)?.flatten().any(|e| {
            std::fs::read_to_string(e.path().join(format!("src/a{round}/b0/f0.txt")))
                .is_ok_and(|t| t == format!("moved {round}\n"))
        });
        if !followed || ready(host, &project).await? != 1 {
            return Err(format!("the pool did not follow the base to {moved}").into());
        }
        let wt = bare_dir.join(format!("wr_{round}"));
        let add_ms = bare_add(root, &wt, &format!("pr_{round}"))?;
        let _ = git(root, &["worktree", "remove", "--force", "--force", &wt.to_string_lossy()]);
        let label = if round == 0 { "warm-up".to_owned() } else { format!("round {round}") };
        println!(
            "  {label:>8}: base +1 commit (1 file): pool refreshed in {refresh_ms:6.1} ms | worktree add {add_ms:7.1} ms"
        );
        if round > 0 {
            refreshes.push(refresh_ms);
            adds.push(add_ms);
        }
    }
    let ratio: Vec<f64> = adds.iter().zip(&refreshes).map(|(a, r)| a / r).collect();
    println!("  refresh after a 1-file move  {} ms", spread(&refreshes, 1));
    println!("  add ÷ refresh                {}", spread(&ratio, 1));
    Ok(())
}
