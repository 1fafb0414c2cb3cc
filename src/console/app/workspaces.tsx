// The workspace picker: every request of the console names the chosen workspace (X-Tenant-Id).
import { unwrap } from "../../sdk/client.ts";
import type { Session } from "./session.ts";
import { useLoad } from "./ui.tsx";

export function WorkspacePicker({
  session,
  onPick,
}: {
  session: Session;
  onPick: (workspace: string | undefined) => void;
}) {
  // Listed with the key's own view (a key bound to one workspace sees only it).
  const list = useLoad(() => unwrap(session.client.api.GET("/v1/workspaces", {})), [session.client]);
  if (!list.data || list.data.length < 2) return null;
  return (
    <select
      aria-label="Workspace"
      value={session.workspace ?? ""}
      onChange={(e) => onPick(e.currentTarget.value || undefined)}
    >
      <option value="">Default workspace</option>
      {list.data.map((w) => (
        <option value={w.id}>{w.name}</option>
      ))}
    </select>
  );
}
