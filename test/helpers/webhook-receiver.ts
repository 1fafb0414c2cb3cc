import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** What the receiver answered. */
  status: number;
}

/**
 * A webhook receiver on loopback: records every request and answers `status` (a test flips it to
 * make the receiver fail for a while).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  status = 200;
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const status = this.status;
        this.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}/hook`;
    return this;
  }

  /** The requests it answered 2xx, their bodies parsed; each one's signature checked with `secret`. */
  accepted(secret: string): { id: string; type: string; data: Record<string, unknown> }[] {
    const wh = new Webhook(secret);
    return this.received
      .filter((r) => r.status >= 200 && r.status < 300)
      .map((r) => {
        const headers = {
          "webhook-id": String(r.headers["webhook-id"]),
          "webhook-timestamp": String(r.headers["webhook-timestamp"]),
          "webhook-signature": String(r.headers["webhook-signature"]),
        };
        // Throws when the signature does not match: the test fails.
        const body = wh.verify(r.body, headers) as { type: string; data: Record<string, unknown> };
        return { id: headers["webhook-id"], type: body.type, data: body.data };
      });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
