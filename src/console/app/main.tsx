// The console: sign in with an API key, then hash-routed pages (hash routes need no server routes,
// so the console works under any SLIPWAY_BASE_PATH).
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { AdminPage, IntegrationsPage } from "./admin.tsx";
import { CreatePage, loadTemplates } from "./create.tsx";
import { DeploymentPage } from "./deployment.tsx";
import { DeploymentsPage } from "./deployments.tsx";
import { ProvidersPage } from "./providers.tsx";
import { inWorkspace, type Session, signIn, signOut, storedKey } from "./session.ts";
import { TokensPage } from "./tokens.tsx";
import "./style.css";
import { ErrorBox } from "./ui.tsx";
import { WorkspacePicker } from "./workspaces.tsx";

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn({ onSession }: { onSession: (s: Session) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string>();
  return (
    <form
      class="signin"
      onSubmit={(e) => {
        e.preventDefault();
        signIn(key.trim()).then(onSession, (err: unknown) => {
          signOut();
          setError(err instanceof Error ? err.message : String(err));
        });
      }}
    >
      <h1>Slipway</h1>
      <label>
        API key{" "}
        <input
          type="password"
          name="api-key"
          autocomplete="off"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
      </label>
      <button type="submit" class="primary">
        Sign in
      </button>
      <p class="muted">The key is kept in this tab only and forgotten when you sign out or close it.</p>
      <ErrorBox error={error} />
    </form>
  );
}

function Page({
  session,
  hash,
  onWorkspace,
}: {
  session: Session;
  hash: string;
  onWorkspace: (workspace: string | undefined) => void;
}) {
  const [, page, id] = hash.split("/");
  if (page === "deployments" && id)
    // Keyed by id: another deployment's page starts empty instead of showing this one's data.
    return <DeploymentPage key={id} session={session} id={id} onWorkspace={onWorkspace} />;
  if (page === "new" && session.role !== "viewer") return <CreatePage session={session} />;
  if (page === "providers") return <ProvidersPage session={session} />;
  if (page === "tokens") return <TokensPage session={session} />;
  if (page === "integrations") return <IntegrationsPage session={session} />;
  if (page === "admin" && session.role === "admin") return <AdminPage session={session} />;
  return <DeploymentsPage session={session} />;
}

function App() {
  const [session, setSession] = useState<Session>();
  const [restoring, setRestoring] = useState(Boolean(storedKey()));
  const hash = useHash();
  useEffect(() => {
    const key = storedKey();
    if (!key) return;
    signIn(key)
      .then(setSession, signOut)
      .finally(() => setRestoring(false));
  }, []);
  // The New deployment form's template list is asked for now, so that it is there when the form opens.
  useEffect(() => {
    if (session && session.role !== "viewer") loadTemplates(session.client).catch(() => undefined);
  }, [session]);
  if (restoring) return <p class="muted">Signing in…</p>;
  const pick = (workspace: string | undefined) =>
    session && setSession(inWorkspace(session, storedKey() ?? "", workspace));
  if (!session) return <SignIn onSession={setSession} />;
  return (
    <>
      <header>
        <strong>Slipway</strong>
        <nav>
          <a href="#/deployments">Deployments</a>
          {session.role !== "viewer" && <a href="#/new">New deployment</a>}
          <a href="#/providers">OAuth providers</a>
          <a href="#/tokens">Tokens</a>
          <a href="#/integrations">Integrations</a>
          {session.role === "admin" && <a href="#/admin">Keys &amp; workspaces</a>}
        </nav>
        <WorkspacePicker session={session} onPick={pick} />
        <span class="muted">{session.role}</span>
        <button
          type="button"
          onClick={() => {
            signOut();
            setSession(undefined);
            location.hash = "";
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Page key={session.workspace ?? ""} session={session} hash={hash} onWorkspace={pick} />
      </main>
    </>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
