/** The page shown when this browser has no valid sign-in. */
export function SignedOut({ reason, detail }: { reason: "signedOut" | "refused" | "badLink"; detail?: string }) {
  return (
    <main class="signed-out" data-testid="signed-out" data-reason={reason}>
      <h1>Not signed in</h1>
      {reason === "refused" ? (
        <p>The host refused this address. Open the cockpit through the URL the host printed (127.0.0.1 or localhost).</p>
      ) : reason === "badLink" ? (
        <p>
          This sign-in link is invalid, expired or already used. Run <code>nucleic open</code> for a new one.
        </p>
      ) : (
        <p>
          This browser is not signed in to the Nucleic host. Open the sign-in link that <code>nucleic demo</code> or{" "}
          <code>nucleic open</code> prints; each link works once and for ten minutes.
        </p>
      )}
      {detail && <p class="muted">{detail}</p>}
    </main>
  );
}
