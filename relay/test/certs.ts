// Test certificates made with the openssl CLI: a CA and the certificates it (or another CA) signs,
// for a relay served over TLS.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";

import type { TlsFiles } from "./support";

/** `openssl req -x509` in `dir`: `<name>.pem` and `<name>.key` (P-256) for `altName`
 *  (`DNS:localhost`), self-signed (a CA) or signed by the CA `<ca>.pem` / `<ca>.key`. */
export function makeCert(dir: string, name: string, altName: string, ca?: string): TlsFiles {
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"];
  args.push("-subj", `/CN=nucleic relay test ${name}`, "-keyout", `${name}.key`, "-out", `${name}.pem`, "-addext", `subjectAltName=${altName}`);
  if (ca) args.push("-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-addext", "basicConstraints=CA:FALSE");
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  return { cert: readFileSync(path.join(dir, `${name}.pem`), "utf8"), key: readFileSync(path.join(dir, `${name}.key`), "utf8") };
}

/** The base64 SHA-256 of a certificate's public key (SPKI), as Chromium's
 *  `--ignore-certificate-errors-spki-list` takes it. */
export function spkiHash(dir: string, name: string): string {
  const pub = execFileSync("openssl", ["x509", "-in", `${name}.pem`, "-pubkey", "-noout"], { cwd: dir });
  const der = execFileSync("openssl", ["pkey", "-pubin", "-outform", "der"], { cwd: dir, input: pub });
  return execFileSync("openssl", ["dgst", "-sha256", "-binary"], { input: der }).toString("base64");
}
