//! Shared by the standalone mock binaries (`mock-anthropic`, `mock-openai`): serve until told
//! to stop.

/// Waits for SIGINT or SIGTERM.
pub async fn until_stopped() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => Ok(()),
    }
}
