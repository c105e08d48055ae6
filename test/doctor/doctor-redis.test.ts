/** `alock doctor` on a Redis store, against a real redis-server started for the suite. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { describeRedis, redisForSuite, startRedis } from '../backends/redis/server.js';
import { byCode, makeRepo, problems, type Repo } from './doctor-harness.js';

let repo: Repo | null = null;
afterEach(() => {
  repo?.cleanup();
  repo = null;
});

describeRedis('alock doctor on a Redis store', () => {
  const server = redisForSuite();

  async function redisRepo(url: string): Promise<Repo> {
    repo = makeRepo();
    const init = await repo.run(['init', '--backend', 'redis', '--redis-url', url]);
    expect(init.code).toBe(0);
    expect((await repo.run(['acquire', '@deploy'])).code).toBe(0);
    return repo;
  }

  it('reports the server version, clock and eviction policy of a healthy server, exit 0', async () => {
    const r = await redisRepo(server().url);
    const doc = await r.doctor();
    expect(problems(doc.checks)).toEqual([]);
    expect(doc.code).toBe(0);
    expect(byCode(doc.checks, 'redis')?.message).toMatch(
      /^redis store redis:\/\/127\.0\.0\.1:\d+\/?0?, key prefix \{.+\}$/,
    );
    expect(byCode(doc.checks, 'redis_version')?.message).toMatch(/answers, Redis \d+\.\d+\.\d+$/);
    expect(byCode(doc.checks, 'clock_skew')?.level).toBe('ok');
    expect(byCode(doc.checks, 'maxmemory_policy')?.message).toMatch(/noeviction/);
    expect(byCode(doc.checks, 'store_locks')?.message).toBe('1 lock readable');
  });

  it('flags a server that may evict the store’s keys, with the command that stops it', async () => {
    const r = await redisRepo(server().url);
    const admin = new Redis(server().port, '127.0.0.1');
    try {
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const doc = await r.doctor();
      expect(doc.code).toBe(1);
      const found = byCode(doc.checks, 'redis_eviction');
      expect(found?.message).toMatch(/^maxmemory-policy is allkeys-lru/);
      expect(found?.fix).toMatch(/^CONFIG SET maxmemory-policy noeviction/);
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      admin.disconnect();
    }
  });

  it('reports damaged store metadata as a finding with its repair, and leaves the damage there', async () => {
    const r = await redisRepo(server().url);
    const marker = JSON.parse(readFileSync(path.join(r.store, 'backend.json'), 'utf8')) as {
      redis: { prefix: string };
    };
    const key = `{${marker.redis.prefix}}:store`;
    const admin = new Redis(server().port, '127.0.0.1');
    try {
      await admin.hset(key, '#fence', 'garbage');
      const doc = await r.doctor();
      expect(doc.code).toBe(1);
      const found = byCode(doc.checks, 'store_unreadable');
      expect(found).toMatchObject({ area: 'store', level: 'problem' });
      expect(found?.fix).toMatch(/repair/);
      expect(await admin.hget(key, '#fence')).toBe('garbage');
    } finally {
      await admin.del(key);
      admin.disconnect();
    }
  });

  it('names a key of the layout of another type (`:domains` a string), as repair then moves it', async () => {
    const r = await redisRepo(server().url);
    const marker = JSON.parse(readFileSync(path.join(r.store, 'backend.json'), 'utf8')) as {
      redis: { prefix: string };
    };
    const key = `{${marker.redis.prefix}}:domains`;
    const admin = new Redis(server().port, '127.0.0.1');
    try {
      await admin.del(key);
      await admin.set(key, 'foreign value');
      const doc = await r.doctor();
      expect(doc.code).toBe(1);
      expect(byCode(doc.checks, 'redis_key_type')).toMatchObject({
        level: 'problem',
        message: `${key} is a string, not a hash`,
        fix: expect.stringMatching(/repair/),
      });
      expect(await admin.get(key)).toBe('foreign value');
      const repair = await r.run(['repair']);
      expect(repair.stdout).toContain(`damage: ${key} was a string, not a hash`);
      expect(byCode((await r.doctor()).checks, 'redis_key_type')).toBeUndefined();
    } finally {
      await admin.del(key);
      admin.disconnect();
    }
  });

  it('reports a server that does not answer as a finding (exit 1), not an error', async () => {
    const gone = await startRedis();
    const r = await redisRepo(gone.url);
    await gone.stop();
    const doc = await r.doctor({ AGENT_LOCK_REDIS_TIMEOUT: '1' });
    expect(doc.code).toBe(1);
    expect(doc.body.error).toBeNull();
    const found = byCode(doc.checks, 'backend_unavailable');
    expect(found).toMatchObject({ area: 'backend', level: 'problem' });
    expect(found?.message).toContain(`127.0.0.1:${gone.port}`);
    // The store on disk is still examined.
    expect(byCode(doc.checks, 'store_marker')?.message).toMatch(/redis at redis:\/\/127\.0\.0\.1/);
  });
});
