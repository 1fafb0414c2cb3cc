import { createServer } from "node:net";

/** Ports handed out and not yet released: the OS could offer one again before its app binds it. */
const handedOut = new Set<number>();

function probePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ port: 0, host: "127.0.0.1", exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** A loopback port that is free now and not promised to another process of this runtime. */
export async function takePort(): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await probePort();
    if (port !== 0 && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("could not find a free port");
}

export function releasePort(port: number): void {
  handedOut.delete(port);
}
