/** The page shown when this browser has no valid sign-in. */
export function SignedOut({ reason }: { reason: "signedOut" | "refused" }) {
  return (
    <main class="signed-out" data-testid="signed-out">
      <h1>Not signed in</h1>
      {reason === "refused" ? (
        <p>The host refused this address. Open the cockpit through the URL the host printed (127.0.0.1 or localhost).</p>
      ) : (
        <p>
          This browser is not signed in to the Nucleic host. Open the sign-in link that <code>nucleic demo</code> or{" "}
          <code>nucleic open</code> prints; each link works once and for ten minutes.
        </p>
      )}
    </main>
  );
}
