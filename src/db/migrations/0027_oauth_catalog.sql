-- Providers made from a catalog template (src/oauth/catalog/) remember which one and the values of
-- its URL placeholders, so the template's quirks (extra authorization parameters, a nested token,
-- Slack's user_scope) apply to their flows. api_base_url is where the proxy sends API calls.
ALTER TABLE oauth_providers ADD COLUMN template text;
ALTER TABLE oauth_providers ADD COLUMN template_params jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE oauth_providers ADD COLUMN api_base_url text;

-- A token whose refresh the provider refused for good (invalid_grant) is kept, marked broken with
-- the provider's reason, so people can see why; it is never handed out. The last refresh and the
-- last error are shown on the Tokens page.
ALTER TABLE oauth_tokens ADD COLUMN broken_at timestamptz;
ALTER TABLE oauth_tokens ADD COLUMN broken_reason text;
ALTER TABLE oauth_tokens ADD COLUMN last_refreshed_at timestamptz;
ALTER TABLE oauth_tokens ADD COLUMN last_error text;
ALTER TABLE oauth_tokens ADD COLUMN last_error_at timestamptz;
