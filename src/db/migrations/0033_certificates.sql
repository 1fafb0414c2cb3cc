-- HTTPS on the apps edge (docs/https.md): certificates shared by every server on the database,
-- with the ACME account, the pending HTTP-01 answers and the internal CA. Private keys are
-- envelopes under the keyring, each bound to its row. Written by resources/certificates/store.ts only.
CREATE TABLE tls_certificates (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  hostname text NOT NULL,
  -- Who issued it: an ACME server or the internal CA (a change of mode replaces it).
  source text NOT NULL CHECK (source IN ('acme', 'internal')),
  -- pending (never issued yet), issued (cert_pem serves; reason: why the last renewal failed), failed.
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'issued', 'failed')),
  reason text,
  cert_pem text,
  key_enc text,
  not_before timestamptz,
  not_after timestamptz,
  -- Back-off of failed orders, and the lease of the one server ordering now.
  failed_attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_until timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tls_certificates_hostname_key UNIQUE (hostname)
);
CREATE INDEX tls_certificates_updated_idx ON tls_certificates (updated_at);

-- One ACME account per directory URL; its key signs every request to that server.
CREATE TABLE acme_accounts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  directory_url text NOT NULL,
  key_enc text NOT NULL,
  account_url text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT acme_accounts_directory_url_key UNIQUE (directory_url)
);

-- HTTP-01 answers while an order waits on them: any server's edge answers the ACME server.
CREATE TABLE acme_challenges (
  token text PRIMARY KEY,
  key_authorization text NOT NULL,
  expires_at timestamptz NOT NULL
);

-- The internal CA's root (SLIPWAY_APPS_TLS=internal), made once by the first server to need it.
CREATE TABLE tls_authorities (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  cert_pem text NOT NULL,
  key_enc text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tls_authorities_name_key UNIQUE (name)
);
