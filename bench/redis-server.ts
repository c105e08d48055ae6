// A throwaway redis-server for the bench: started on a free port with persistence off, reached by
// PING before use, and stopped at the end, also when the bench fails or is interrupted.
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';

const START_MS = 5000;

export interface RedisServer {
  port: number;
  url: string;
  pid: number;
  /** Idempotent. */
  stop(): Promise<void>;
}

/** The installed redis-server's version line, or null when there is none on PATH. */
export function redisServerVersion(binary = 'redis-server'): string | null {
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return null;
  return probe.stdout.trim();
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** One raw PING over TCP: true on +PONG. */
function ping(port: number, timeoutMs = 200): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts `redis-server --port P --save '' --appendonly no` (bound to 127.0.0.1, working folder
 * `dir`) and resolves once it answers PING.
 */
export async function startRedisServer({
  dir,
  binary = 'redis-server',
  attempts = 3,
}: {
  dir: string;
  binary?: string;
  attempts?: number;
}): Promise<RedisServer> {
  let lastError: Error | null = null;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    args.push('--dir', dir);
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    let exited: { code: number | null; signal: NodeJS.Signals | null; error?: Error } | null = null;
    child.on('exit', (code, signal) => {
      exited = { code, signal };
    });
    child.on('error', (error) => {
      exited = { code: null, signal: null, error };
    });

    // The server must go even if the bench dies: on exit (synchronously) and on ^C / SIGTERM.
    const killNow = () => {
      if (exited === null) child.kill('SIGKILL');
    };
    const onSignal = (signal: NodeJS.Signals) => {
      killNow();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    };
    process.on('exit', killNow);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const stop = async () => {
      process.off('exit', killNow);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (exited !== null) return;
      child.kill('SIGTERM');
      for (let i = 0; i < 50 && exited === null; i++) await sleep(20);
      if (exited === null) child.kill('SIGKILL');
    };

    const deadline = Date.now() + START_MS;
    let up = false;
    while (Date.now() < deadline && exited === null) {
      if (await ping(port)) {
        up = true;
        break;
      }
      await sleep(25);
    }
    if (up) return { port, url: `redis://127.0.0.1:${port}`, pid: child.pid!, stop };
    await stop();
    const ended = exited as { code: number | null; signal: NodeJS.Signals | null; error?: Error } | null;
    lastError = new Error(
      `redis-server on port ${port} did not answer PING within ${START_MS} ms` +
        (ended ? ` (exited ${ended.error?.message ?? ended.code ?? ended.signal})` : '') +
        (output.trim() ? `: ${output.trim().split('\n').slice(-3).join(' | ')}` : ''),
    );
  }
  throw lastError;
}
