import { connect } from "node:net";

/**
 * HAProxy's runtime API on its stats socket: one command a connection (the socket answers and
 * closes). Only the commands the front uses; each throws HaproxyError with HAProxy's own words
 * when it refuses.
 */

export class HaproxyError extends Error {}

/** One server row of `show stat`: its backend, name, address, requests in flight and state. */
export interface ServerStat {
  backend: string;
  server: string;
  /** Sessions on it now: requests being served (HTTP keep-alive idle connections are not sessions). */
  current: number;
  status: string;
}

export class HaproxyApi {
  constructor(private readonly socket: string) {}

  /** Sends one command; resolves with the answer (empty for most changes that succeed). */
  command(line: string, timeoutMs = 5000): Promise<string> {
    if (/[\n;]/.test(line)) return Promise.reject(new HaproxyError(`not one command: ${line}`));
    return new Promise((resolve, reject) => {
      const conn = connect(this.socket);
      let answer = "";
      const timer = setTimeout(() => conn.destroy(new HaproxyError(`no answer to "${line}"`)), timeoutMs);
      conn.setEncoding("utf8");
      conn.on("data", (d: string) => {
        answer += d;
      });
      conn.on("error", (err) => {
        clearTimeout(timer);
        reject(err instanceof HaproxyError ? err : new HaproxyError(`${line}: ${err.message}`));
      });
      conn.on("end", () => {
        clearTimeout(timer);
        resolve(answer.trim());
      });
      conn.end(`${line}\n`);
    });
  }

  /** A change that answers nothing (or only a notice) when it worked. */
  private async change(line: string, ok: RegExp = /^$/): Promise<void> {
    const answer = await this.command(line);
    if (!ok.test(answer)) throw new HaproxyError(`${line}: ${answer}`);
  }

  setMap(file: string, key: string, value: string): Promise<void> {
    // `set map` fails on a missing key and `add map` would add a duplicate: remove, then add.
    return this.command(`del map ${file} ${key}`).then(() => this.change(`add map ${file} ${key} ${value}`));
  }

  delMap(file: string, key: string): Promise<void> {
    return this.command(`del map ${file} ${key}`).then(() => undefined);
  }

  /** Points a declared server at `address` (`host:port`, `[v6]:port`) and puts it in the rotation. */
  async useServer(backend: string, server: string, address: string): Promise<void> {
    const at = address.lastIndexOf(":");
    const host = address.slice(0, at).replace(/^\[|\]$/g, "");
    const port = address.slice(at + 1);
    await this.change(
      `set server ${backend}/${server} addr ${host} port ${port}`,
      /^$|changed from|no need to change/,
    );
    await this.change(`set server ${backend}/${server} weight 1`);
    await this.change(`set server ${backend}/${server} state ready`);
  }

  /** Out of the rotation; requests already on it finish. */
  drainServer(backend: string, server: string): Promise<void> {
    return this.change(`set server ${backend}/${server} state drain`);
  }

  /** Takes a drained server out (maintenance): its name is free for another process. */
  releaseServer(backend: string, server: string): Promise<void> {
    return this.change(`set server ${backend}/${server} state maint`);
  }

  /** Every server's row of `show stat`. */
  async servers(): Promise<ServerStat[]> {
    const csv = await this.command("show stat -1 4 -1");
    const lines = csv.split("\n");
    const head = (lines[0] ?? "").replace(/^# /, "").split(",");
    const col = (name: string) => head.indexOf(name);
    const [pxname, svname, scur, status] = [col("pxname"), col("svname"), col("scur"), col("status")];
    if (pxname < 0 || svname < 0 || scur < 0 || status < 0) throw new HaproxyError(`show stat: ${lines[0]}`);
    return lines.slice(1).flatMap((line) => {
      const f = line.split(",");
      if (f.length < head.length - 1) return [];
      return [
        {
          backend: f[pxname] ?? "",
          server: f[svname] ?? "",
          current: Number(f[scur] ?? 0),
          status: f[status] ?? "",
        },
      ];
    });
  }

  /** The worker answering the socket (changes with each reload). */
  async workerPid(): Promise<number> {
    const info = await this.command("show info");
    const pid = /^Pid:\s*(\d+)$/m.exec(info)?.[1];
    if (pid === undefined) throw new HaproxyError(`show info: ${info.slice(0, 200)}`);
    return Number(pid);
  }
}
