/**
 * Real Redis servers for the tests: `redis-server` started on a free port in a folder of its own,
 * without persistence, and stopped afterwards. Never a mock. Without the binary the Redis suites
 * skip loudly, unless CI is set: there a missing server is a failure.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { redisAnswers } from '../../../src/backends/redis/probe.js';

export const redisAvailable = spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).status === 0;

let warned = false;

/** `describe` for suites that need redis-server: skips loudly without it, fails without it in CI. */
export function describeRedis(name: string, body: () => void): void {
  if (redisAvailable) {
    describe(name, body);
    return;
  }
  if (process.env.CI) {
    describe(name, () => {
      it('needs redis-server, which CI must install', () => {
        throw new Error(
          'redis-server is not installed; .ci/run installs it with apt-get install -y redis-server',
        );
      });
    });
    return;
  }
  if (!warned) {
    warned = true;
    console.warn(
      '\n!!! SKIPPING the Redis test suites: no redis-server on PATH. Install it (apt-get install -y redis-server); with CI set they fail instead.\n',
    );
  }
  describe.skip(name, body);
}

/** A server for the enclosing describe block: started before its tests, stopped after them. */
export function redisForSuite(options: { port?: number; args?: string[] } = {}): () => RedisServer {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (server === undefined) throw new Error('the Redis server of this suite has not started');
    return server;
  };
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

async function waitUntil(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface RedisServer {
  readonly port: number;
  /** redis://127.0.0.1:PORT */
  readonly url: string;
  readonly process: ChildProcess;
  /** SIGSTOP / SIGCONT: the server stops answering, with connections kept open. */
  pause(): void;
  resume(): void;
  /** SIGKILL, then a new server on the same port, empty (nothing was persisted). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts redis-server on a free port (or `port`), with `args` added (e.g. cluster options). */
export async function startRedis(options: { port?: number; args?: string[] } = {}): Promise<RedisServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'alock-redis-'));
  let port = options.port ?? (await freePort());
  let child: ChildProcess;
  const launch = async () => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        ...(options.args ?? []),
      ],
      { stdio: 'ignore' },
    );
    const exited = once(child, 'exit').then(() => false);
    const up = waitUntil(
      () => redisAnswers('127.0.0.1', port, 200, true),
      `redis-server on port ${port}`,
    ).then(() => true);
    return Promise.race([up, exited]);
  };
  // A port found free can be taken before the server binds it: try another.
  for (let attempt = 0; !(await launch()); attempt++) {
    if (options.port !== undefined || attempt >= 5)
      throw new Error(`redis-server did not start on port ${port}`);
    port = await freePort();
  }
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    get process() {
      return child;
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async restart() {
      const gone = once(child, 'exit');
      child.kill('SIGKILL');
      await gone;
      if (!(await launch())) throw new Error(`redis-server did not restart on port ${port}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = once(child, 'exit');
        child.kill('SIGCONT');
        child.kill('SIGKILL');
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

export interface RedisCluster {
  readonly ports: number[];
  /** redis://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3?cluster=1 */
  readonly url: string;
  stop(): Promise<void>;
}

/** A real Redis Cluster of `masters` masters and no replicas, every slot assigned. */
export async function startCluster(masters = 3): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < masters; i++) {
      nodes.push(
        await startRedis({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            `nodes-${i}.conf`,
            '--cluster-node-timeout',
            '2000',
          ],
        }),
      );
    }
    const created = spawnSync(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    await waitUntil(
      async () => {
        return nodes.every((n) => {
          const info = spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], {
            encoding: 'utf8',
          });
          return /cluster_state:ok/.test(info.stdout);
        });
      },
      'the cluster to be ok',
      20_000,
    );
  } catch (error) {
    for (const node of nodes) await node.stop();
    throw error;
  }
  return {
    ports: nodes.map((n) => n.port),
    url: `redis://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}?cluster=1`,
    async stop() {
      for (const node of nodes) await node.stop();
    },
  };
}
