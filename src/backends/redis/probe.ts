/**
 * Is a Redis server answering at host:port, without a password? Used once, when a store is first opened with nothing
 * configured: a PING over a plain socket (ioredis stays unloaded), bounded by a short timeout.
 */
import { createRequire } from 'node:module';

// Loaded on first use: most processes (an agent's hook on every tool call) never probe.
let net: typeof import('node:net') | undefined;

export function redisAnswers(
  host: string,
  port: number,
  timeoutMs: number,
  /** Count an error reply too (a server that wants a password is up): for waiting on a start. */
  anyReply = false,
): Promise<boolean> {
  return new Promise((resolve) => {
    net ??= createRequire(import.meta.url)('node:net') as typeof import('node:net');
    const socket = net.connect({ host, port });
    const finish = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    // Only +PONG counts: a server that wants a password (-NOAUTH) is not one we can use unasked.
    socket.once('data', (data) => finish(data[0] === 0x2b || (anyReply && data[0] === 0x2d)));
  });
}
