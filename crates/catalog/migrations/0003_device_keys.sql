-- Nucleic catalog, schema 3: browsers sign in as devices with a key pair of their own (the public
-- key in `public_key`, SubjectPublicKeyInfo DER) instead of a port-blind session cookie. Browsers
-- signed in with a cookie (no key) can no longer prove themselves: they are revoked here, and
-- their cookie hashes are forgotten.

UPDATE devices
   SET revoked_at = CAST(unixepoch('subsec') * 1000 AS INTEGER)
 WHERE public_key IS NULL AND revoked_at IS NULL AND session_hash IS NOT NULL;

UPDATE devices SET session_hash = NULL;
