/**
 * A store behind Redis Sentinel: the URL names the Sentinels and the master's name, and the store
 * finds the master through them. Real processes: one master and one Sentinel watching it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisAnswers } from '../../../src/backends/redis/probe.js';
import { RedisStore } from '../../../src/backends/redis/redis-store.js';
import { openLocks } from '../../../src/locks.js';
import { describeRedis, freePort, type RedisServer, startRedis } from './server.js';

describeRedis('redis store through Sentinel', () => {
  let master: RedisServer;
  let sentinel: ChildProcess;
  let sentinelPort: number;
  let dir: string;

  beforeAll(async () => {
    master = await startRedis();
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-sentinel-')));
    sentinelPort = await freePort();
    const config = path.join(dir, 'sentinel.conf');
    writeFileSync(
      config,
      [
        `port ${sentinelPort}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor primary 127.0.0.1 ${master.port} 1`,
        'sentinel down-after-milliseconds primary 5000',
        '',
      ].join('\n'),
    );
    sentinel = spawn('redis-server', [config, '--sentinel'], { stdio: 'ignore' });
    const deadline = Date.now() + 10_000;
    while (!(await redisAnswers('127.0.0.1', sentinelPort, 200))) {
      if (Date.now() > deadline) throw new Error('the sentinel did not start');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  afterAll(async () => {
    if (sentinel && sentinel.exitCode === null) {
      const gone = once(sentinel, 'exit');
      sentinel.kill('SIGKILL');
      await gone;
    }
    await master?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds the master by name and keeps its locks there', async () => {
    const url = `redis://127.0.0.1:${sentinelPort}?sentinel=primary`;
    const store = (agentId: string) =>
      openLocks({
        dir,
        backend: new RedisStore({
          url,
          prefix: 'sentinel',
          timeoutMs: 5000,
          busyTimeoutMs: 15_000,
          staleMs: 7_200_000,
        }),
        identity: { agentId },
        env: {},
      });
    const a = await store('A');
    const b = await store('B');
    try {
      expect(a.store.location).toBe(url);
      expect((await a.acquire('@merge', { ttl: 60 })).status).toBe('acquired');
      expect((await b.acquire('@merge')).status).toBe('held');
      // The lock really is on the master: a direct handle on it sees the same store.
      const direct = await openLocks({
        dir,
        backend: new RedisStore({
          url: master.url,
          prefix: 'sentinel',
          timeoutMs: 5000,
          busyTimeoutMs: 15_000,
          staleMs: 7_200_000,
        }),
        identity: { agentId: 'C' },
        env: {},
      });
      expect((await direct.list()).locks.map((l) => [l.scope, l.agent_id])).toEqual([['@merge', 'A']]);
      await direct.close();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
