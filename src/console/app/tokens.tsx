// Tokens: per OAuth provider, which end users hold a stored token, its scopes, expiry, last refresh
// and last error (why a broken one broke), with revoke. Never a token's value.
import type { Session } from "./session.ts";
import { ErrorBox, Section, useAction, useLoad } from "./ui.tsx";

interface TokenRow {
  id: string;
  provider_id: string;
  user_id: string;
  agent_id: string | null;
  scopes: string[];
  expires_at: string | null;
  status?: "ok" | "expired" | "broken";
  broken_reason?: string | null;
  last_refreshed_at?: string | null;
  last_error?: string | null;
  last_error_at?: string | null;
}

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : "—");

const STATUS_CLASS = { ok: "good", expired: "muted", broken: "bad" } as const;

export function TokensPage({ session }: { session: Session }) {
  // `raw`: the status fields may be newer than the SDK's generated types.
  const list = useLoad(
    () => session.client.raw<TokenRow[]>("GET", "/v2/auth/tokens?include_status=true"),
    [],
  );
  const revoke = useAction(list.reload);
  const writable = session.role !== "viewer";
  const byProvider = new Map<string, TokenRow[]>();
  for (const t of list.data ?? [])
    byProvider.set(t.provider_id, [...(byProvider.get(t.provider_id) ?? []), t]);
  return (
    <Section title="Tokens">
      <p class="muted">Stored OAuth tokens of this tenant, by provider. Their values are never shown.</p>
      <ErrorBox error={list.error ?? revoke.error} />
      {[...byProvider].map(([provider, tokens]) => (
        <div class="token-provider" data-provider={provider}>
          <h3>{provider}</h3>
          <table>
            <thead>
              <tr>
                <th>User</th>
                <th>Agent</th>
                <th>Scopes</th>
                <th>Expires</th>
                <th>Last refresh</th>
                <th>Status</th>
                <th>Last error</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {tokens.map((t) => (
                <tr data-token={t.id}>
                  <td>{t.user_id}</td>
                  <td>{t.agent_id ?? "—"}</td>
                  <td>{t.scopes.join(" ")}</td>
                  <td>{when(t.expires_at)}</td>
                  <td>{when(t.last_refreshed_at)}</td>
                  <td>
                    <span
                      class={`status ${STATUS_CLASS[t.status ?? "ok"]}`}
                      title={t.broken_reason ?? undefined}
                    >
                      {t.status ?? "ok"}
                    </span>
                  </td>
                  <td class="token-error">{t.broken_reason ?? t.last_error ?? ""}</td>
                  <td>
                    {writable && (
                      <button
                        type="button"
                        disabled={revoke.busy}
                        onClick={() => {
                          if (
                            !confirm(`Revoke ${t.user_id}'s ${provider} token at the provider and delete it?`)
                          )
                            return;
                          revoke.run(() =>
                            session.client.raw("DELETE", `/v2/auth/tokens/${encodeURIComponent(t.id)}`),
                          );
                        }}
                      >
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {list.data && !list.data.length && <p class="muted">No stored tokens.</p>}
    </Section>
  );
}
