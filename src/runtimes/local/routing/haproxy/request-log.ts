import { createSocket, type Socket } from "node:dgram";

/**
 * The front's request log: HAProxy sends one UDP datagram a request it proxied to an app
 * (config.ts's log-format: slot, status, total ms), to a socket on loopback that only this
 * process reads. A line that is not one (torn, or from elsewhere) is skipped.
 */

export interface LoggedRequest {
  slot: string;
  status: number;
  ms: number;
}

export function parseRequestLine(line: string): LoggedRequest | undefined {
  const m = /^(s\d+) (\d{3}) (\d+)\s*$/.exec(line);
  if (m === null) return undefined;
  return { slot: m[1] as string, status: Number(m[2]), ms: Number(m[3]) };
}

export class RequestLog {
  private socket: Socket | undefined;

  constructor(private readonly onRequest: (r: LoggedRequest) => void) {}

  /** Binds a loopback port; resolves to it. */
  listen(): Promise<number> {
    const socket = createSocket("udp4");
    this.socket = socket;
    socket.on("message", (msg, from) => {
      // Only HAProxy, on this machine, sends here.
      if (from.address !== "127.0.0.1") return;
      const entry = parseRequestLine(msg.toString("utf8"));
      if (entry !== undefined) this.onRequest(entry);
    });
    return new Promise((resolve, reject) => {
      socket.once("error", reject);
      socket.bind(0, "127.0.0.1", () => {
        socket.off("error", reject);
        resolve(socket.address().port);
      });
    });
  }

  close(): Promise<void> {
    const socket = this.socket;
    this.socket = undefined;
    return new Promise((resolve) => (socket ? socket.close(() => resolve()) : resolve()));
  }
}
