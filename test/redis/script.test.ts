/**
 * The commit script on its own, called through ioredis against a real redis-server: what it stores
 * (read back with HGETALL/LRANGE) and what it answers, for every branch its header documents.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COMMIT_LUA } from '../../src/backends/redis/commit-script.js';
import { commitArgv } from '../../src/backends/redis/commit.js';
import { describeRedis, type RedisServer, startRedis } from './server.js';

interface CommitArgs {
  epoch: string;
  version: string;
  /** ARGV[3..5]: '1' checks at <= server time < until; then 'm' (MERGE) or 'r' and agents (REBASE). */
  check?: string;
  at?: number;
  until?: number;
  fence: number | string;
  tombstones?: string;
  /** ARGV[9]: the commit's id (default: a fresh one; '' validates only). */
  id?: string;
  puts?: [string, string][];
  dels?: string[];
  /** Channels of waiters the commit names: each hears the commit, watched or not. */
  wake?: string[];
  events?: string;
}

interface Store {
  readonly prefix: string;
  readonly keys: { store: string; changes: string; events: string; channel: string; domains: string };
  commit(args: CommitArgs): Promise<string[]>;
  /** A first call without a snapshot: the full sync (and the epoch of a new store). */
  sync(): Promise<string[]>;
  state(): Promise<{
    /** The store hash's lock fields. */
    locks: Record<string, string>;
    /** The store hash's '#' fields, without the '#' (and without #watch, which no commit writes). */
    meta: Record<string, string>;
    /** Each entry of the changes list as its words: version, previous version, ids touched (the commit id left out). */
    changes: string[][];
    events: string[];
  }>;
}

type Commit = (...args: string[]) => Promise<string[]>;

let server: RedisServer;
const clients: Redis[] = [];

function client(url = server.url): Redis {
  const redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  redis.defineCommand('agentLockCommit', { numberOfKeys: 4, lua: COMMIT_LUA });
  clients.push(redis);
  return redis;
}

/** Marks the store as listened to for a minute (what RedisStore.watch does): commits then publish. */
async function watching(redis: Redis, s: Store): Promise<void> {
  const [seconds] = await redis.time();
  await redis.hset(s.keys.store, '#watch', String((Number(seconds) + 60) * 1000));
}

/** The server's clock in microseconds. */
async function serverMicros(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1_000_000 + Number(us);
}

function store(redis: Redis, prefix = `script-${randomBytes(6).toString('hex')}`): Store {
  const tag = `{${prefix}}`;
  const keys = {
    store: `${tag}:store`,
    changes: `${tag}:changes`,
    events: `${tag}:history`,
    channel: `${tag}:changed`,
    domains: `${tag}:domains`,
  };
  const call = (redis as unknown as { agentLockCommit: Commit }).agentLockCommit.bind(redis);
  const commit = (a: CommitArgs) => {
    const check = a.check ?? '0';
    return call(
      ...commitArgv({
        keys: { store: keys.store, changes: keys.changes, history: keys.events, domains: keys.domains },
        epoch: a.epoch,
        version: a.version,
        checkTime: check.startsWith('1'),
        how: check.slice(1),
        now: a.at ?? 0,
        validUntil: a.until ?? 0,
        fence: a.fence as number,
        seenFence: null,
        tombstones: a.tombstones ?? '',
        channel: keys.channel,
        commitId: a.id ?? randomBytes(6).toString('hex'),
        reads: [],
        writes: [],
        put: a.puts ?? [],
        del: a.dels ?? [],
        notify: a.wake ?? [],
        events: a.events ?? null,
      }),
    );
  };
  return {
    prefix,
    keys,
    commit,
    sync: () => commit({ epoch: '', version: '', fence: 0 }),
    async state() {
      const [all, changes, events] = await Promise.all([
        redis.hgetall(keys.store),
        redis.lrange(keys.changes, 0, -1),
        redis.xrange(keys.events, '-', '+'),
      ]);
      const locks: Record<string, string> = {};
      const meta: Record<string, string> = {};
      for (const [field, value] of Object.entries(all)) {
        if (!field.startsWith('#')) locks[field] = value;
        // #dv and #floor are the domains' (test/redis/domains.test.ts).
        else if (field !== '#watch' && field !== '#dv' && field !== '#floor') meta[field.slice(1)] = value;
      }
      return {
        locks,
        meta,
        changes: changes.map((entry) => words(entry).filter((_, i) => i !== 2)),
        // One stream entry per commit: its field 'e' holds the commit's events.
        events: events.map(([, fields]) => fields[1]!),
      };
    },
  };
}

/** The pairs after the 7 header fields of a sync answer, as a map. */
function listed(answer: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 7; i < answer.length; i += 2) out[answer[i]!] = answer[i + 1]!;
  expect((answer.length - 7) % 2).toBe(0);
  return out;
}

const rec = (id: string, n = 1) => JSON.stringify({ id, n });
const words = (entry: string) => entry.split(' ').filter((word) => word !== '');

describeRedis('the commit script', () => {
  beforeAll(async () => {
    server = await startRedis();
  });
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('gives a new store an epoch from the server clock and answers a full sync', async () => {
    const redis = client();
    const s = store(redis);
    const before = await serverMicros(redis);
    const answer = await s.sync();
    const after = await serverMicros(redis);
    expect(answer).toHaveLength(7);
    const [kind, epoch, version, now, fence, tomb, mode] = answer as string[];
    expect([kind, version, fence, tomb, mode]).toEqual(['sync', '0', '0', '[]', 'full']);
    expect(epoch).toMatch(/^\d+$/);
    expect(Number(epoch)).toBeGreaterThanOrEqual(before);
    expect(Number(epoch)).toBeLessThanOrEqual(after);
    // `now` is the server's clock in epoch ms.
    expect(Number(now)).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    expect(Number(now)).toBeLessThanOrEqual(Math.floor(after / 1000));
    expect(await s.state()).toEqual({
      locks: {},
      meta: { epoch, version: '0', fence: '0', tomb_v: '0' },
      changes: [],
      events: [],
    });
    // A second client without a snapshot gets the same epoch: it is made once.
    const again = await s.sync();
    expect(again.slice(0, 3)).toEqual(['sync', epoch, '0']);
    expect(again[6]).toBe('full');
  });

  it('a commit at the current version applies puts, dels, events, tombstones and fence, and publishes', async () => {
    const redis = client();
    const subscriber = client();
    const s = store(redis);
    const messages: string[] = [];
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === s.keys.channel) messages.push(message);
    });
    await subscriber.subscribe(s.keys.channel);

    const [, epoch] = await s.sync();
    await watching(redis, s);
    const before = await serverMicros(redis);
    const first = await s.commit({
      epoch: epoch!,
      version: '0',
      fence: 7,
      puts: [
        ['lk_a', rec('lk_a')],
        ['lk_b', rec('lk_b')],
      ],
    });
    expect(first).toHaveLength(4);
    expect(first.slice(0, 2)).toEqual(['ok', epoch]);
    const v1 = first[2]!;
    // Versions follow the server's clock in microseconds.
    expect(Number(v1)).toBeGreaterThanOrEqual(before);
    expect(Number(v1)).toBeLessThanOrEqual(await serverMicros(redis));

    const event = JSON.stringify([
      { at: 1, type: 'broken', by: 'X' },
      { at: 1, type: 'acquired' },
    ]);
    const tombstones = JSON.stringify([{ fence: 7, at: 1 }]);
    const second = await s.commit({
      epoch: epoch!,
      version: v1,
      fence: 9,
      tombstones,
      puts: [['lk_c', rec('lk_c')]],
      dels: ['lk_a'],
      events: event,
    });
    expect(second.slice(0, 2)).toEqual(['ok', epoch]);
    const v2 = second[2]!;
    expect(Number(v2)).toBeGreaterThan(Number(v1));

    expect(await s.state()).toEqual({
      locks: { lk_b: rec('lk_b'), lk_c: rec('lk_c') },
      meta: { epoch, version: v2, fence: '9', tombstones, tomb_v: v2 },
      changes: [
        [v1, '0', 'lk_a', 'lk_b'],
        [v2, v1, 'lk_c', 'lk_a'],
      ],
      events: [event],
    });

    // A commit that only moves the fence is a change too.
    const third = await s.commit({ epoch: epoch!, version: v2, fence: 10 });
    expect(third[0]).toBe('ok');
    const v3 = third[2]!;
    expect(Number(v3)).toBeGreaterThan(Number(v2));
    const after = await s.state();
    expect(after.meta).toEqual({ epoch, version: v3, fence: '10', tombstones, tomb_v: v2 });
    expect(after.changes.at(-1)).toEqual([v3, v2]);

    // Every commit published its changes-list entry (new version first, then the previous one,
    // the commit id and the ids it touched), in order.
    const stored = (await redis.lrange(s.keys.changes, 0, -1)).slice(-3);
    await expect.poll(() => messages.map((m) => m.split('\n')[0]), { timeout: 10_000 }).toEqual(stored);
    expect(messages.map((m) => m.split(' ')[0])).toEqual([v1, v2, v3]);
    // Then the fence after the commit, its tombstones ('' when unchanged) and each record written.
    expect(messages[2]!.split('\n').slice(1)).toEqual(['10', '']);
  });

  it('versions strictly increase over many quick commits', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    let version = '0';
    const seen: number[] = [];
    for (let k = 0; k < 50; k++) {
      const answer = await s.commit({ epoch: epoch!, version, fence: 0, puts: [[`id${k}`, rec(`id${k}`)]] });
      expect(answer[0]).toBe('ok');
      version = answer[2]!;
      seen.push(Number(version));
    }
    for (let k = 1; k < seen.length; k++) expect(seen[k]!).toBeGreaterThan(seen[k - 1]!);
    expect((await s.state()).meta.version).toBe(version);
  });

  it('a commit at a stale version changes nothing and answers the delta since it', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const put = async (version: string, a: Partial<CommitArgs>) => {
      const answer = await s.commit({ epoch: epoch!, version, fence: 0, ...a });
      expect(answer[0]).toBe('ok');
      return answer[2]!;
    };
    const v1 = await put('0', {
      puts: [
        ['lk_a', rec('lk_a')],
        ['lk_b', rec('lk_b')],
        ['lk_keep', rec('lk_keep')],
      ],
    });
    const tombstones = JSON.stringify([{ fence: 3 }]);
    const v2 = await put(v1, { puts: [['lk_a', rec('lk_a', 2)]], fence: 3, tombstones });
    const v3 = await put(v2, { dels: ['lk_b'], puts: [['lk_c', rec('lk_c')]] });
    const stored = await s.state();

    // A client still at v1 tries to write: nothing happens, it learns what changed since v1.
    const lost = await s.commit({
      epoch: epoch!,
      version: v1,
      fence: 5,
      tombstones: '[]',
      puts: [['lk_x', rec('lk_x')]],
      dels: ['lk_keep'],
      events: '[{"type":"broken"}]',
    });
    expect(lost.slice(0, 3)).toEqual(['sync', epoch, v3]);
    expect(lost[4]).toBe('3');
    // The tombstones changed after v1: they are sent.
    expect(lost[5]).toBe(tombstones);
    expect(lost[6]).toBe('delta');
    expect(listed(lost)).toEqual({ lk_a: rec('lk_a', 2), lk_b: '', lk_c: rec('lk_c') });
    expect(await s.state()).toEqual(stored);

    // A client at v2 learns only about v3, and no tombstones ('' = unchanged since its version).
    const fromV2 = await s.commit({ epoch: epoch!, version: v2, fence: 3, puts: [['lk_y', rec('lk_y')]] });
    expect(fromV2.slice(0, 3)).toEqual(['sync', epoch, v3]);
    expect(fromV2[5]).toBe('');
    expect(fromV2[6]).toBe('delta');
    expect(listed(fromV2)).toEqual({ lk_b: '', lk_c: rec('lk_c') });

    // A client at version 0 of this epoch still gets a delta: the list reaches back to it.
    const fromZero = await s.commit({ epoch: epoch!, version: '0', fence: 0 });
    expect(fromZero[6]).toBe('delta');
    expect(fromZero[5]).toBe(tombstones);
    expect(listed(fromZero)).toEqual({
      lk_a: rec('lk_a', 2),
      lk_b: '',
      lk_c: rec('lk_c'),
      lk_keep: rec('lk_keep'),
    });

    // A version the store never had, or none at all, gets the full state.
    for (const version of [String(Number(v2) + 1), '', 'x']) {
      const full = await s.commit({ epoch: epoch!, version, fence: 0, puts: [['lk_z', rec('lk_z')]] });
      expect(full.slice(0, 3)).toEqual(['sync', epoch, v3]);
      expect(full[5]).toBe(tombstones);
      expect(full[6]).toBe('full');
      expect(listed(full)).toEqual({ lk_a: rec('lk_a', 2), lk_c: rec('lk_c'), lk_keep: rec('lk_keep') });
    }
    expect(await s.state()).toEqual(stored);
  });

  it('answers a commit that arrives twice (a resend after a dropped reply) with the version it made, once', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const first = {
      epoch: epoch!,
      version: '0',
      fence: 7,
      id: 'commit-a',
      puts: [['lk_a', rec('lk_a')]] as [string, string][],
    };
    const made = await s.commit(first);
    expect(made[0]).toBe('ok');
    // Another client commits on top before the resend arrives.
    const other = await s.commit({ epoch: epoch!, version: made[2]!, fence: 7, dels: ['lk_a'] });
    expect(other[0]).toBe('ok');
    const stored = await s.state();

    const again = await s.commit(first);
    expect(again.slice(0, 3)).toEqual(['ok', epoch, made[2]]);
    expect(await s.state()).toEqual(stored);
    // The same snapshot with another id is a different decision: judged stale, as always.
    const different = await s.commit({ ...first, id: 'commit-b' });
    expect(different.slice(0, 3)).toEqual(['sync', epoch, other[2]]);
    expect(await s.state()).toEqual(stored);
  });

  it('answers a full sync once the changes list (at least 128 entries) no longer reaches back', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const versions = ['0'];
    const total = 300;
    for (let k = 1; k <= total; k++) {
      const answer = await s.commit({
        epoch: epoch!,
        version: versions[k - 1]!,
        fence: 0,
        puts: [[`id${k}`, rec(`id${k}`)]],
      });
      expect(answer[0]).toBe('ok');
      versions.push(answer[2]!);
    }
    const stored = await s.state();
    // The list keeps at least the last 128 commits, and it does not keep them all.
    expect(stored.changes.length).toBeGreaterThanOrEqual(128);
    expect(stored.changes.length).toBeLessThan(total);
    // What it keeps is the newest commits, in order, each naming the version it was made on.
    const kept = stored.changes.length;
    const first = total - kept + 1;
    stored.changes.forEach((entry, i) => {
      expect(entry).toEqual([versions[first + i], versions[first + i - 1], `id${first + i}`]);
    });

    // The oldest version the list reaches back to: a delta of the commits since.
    const oldest = first - 1;
    const delta = await s.commit({ epoch: epoch!, version: versions[oldest]!, fence: 0 });
    expect(delta.slice(0, 3)).toEqual(['sync', epoch, versions[total]]);
    expect(delta[6]).toBe('delta');
    const ids = Object.keys(listed(delta)).sort();
    expect(ids).toEqual(Array.from({ length: kept }, (_, i) => `id${first + i}`).sort());

    // One version older: the list lost the commit made on it, so everything is sent.
    for (const version of [versions[oldest - 1]!, versions[1]!, '0']) {
      const full = await s.commit({ epoch: epoch!, version, fence: 0, puts: [['late', rec('late')]] });
      expect(full.slice(0, 3)).toEqual(['sync', epoch, versions[total]]);
      expect(full[6]).toBe('full');
      const all = listed(full);
      expect(Object.keys(all)).toHaveLength(total);
      expect(all.id1).toBe(rec('id1'));
    }
    expect(await s.state()).toEqual(stored);
  });

  it('a wrong epoch answers a full sync and changes nothing, even at the right version', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const ok = await s.commit({ epoch: epoch!, version: '0', fence: 1, puts: [['lk_a', rec('lk_a')]] });
    const version = ok[2]!;
    const stored = await s.state();
    for (const wrong of [String(Number(epoch) - 1), '', 'nope']) {
      const answer = await s.commit({
        epoch: wrong,
        version,
        fence: 2,
        puts: [['lk_b', rec('lk_b')]],
        dels: ['lk_a'],
      });
      expect(answer.slice(0, 3)).toEqual(['sync', epoch, version]);
      expect(answer[4]).toBe('1');
      expect(answer[6]).toBe('full');
      expect(listed(answer)).toEqual({ lk_a: rec('lk_a') });
    }
    expect(await s.state()).toEqual(stored);
  });

  it("with ARGV[3]='1' a decision outside the server's time window answers 'time' and changes nothing", async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 1, puts: [['lk_a', rec('lk_a')]] });
    const version = first[2]!;
    const stored = await s.state();
    const nowMs = Math.floor((await serverMicros(redis)) / 1000);
    const change = { puts: [['lk_b', rec('lk_b')]] as [string, string][], dels: ['lk_a'], fence: 5 };

    // Decided at a time the server has not reached yet.
    const future = await s.commit({
      epoch: epoch!,
      version,
      check: '1',
      at: nowMs + 60_000,
      until: nowMs + 120_000,
      ...change,
    });
    expect(future).toHaveLength(4);
    expect(future.slice(0, 3)).toEqual(['time', epoch, version]);
    expect(Number(future[3])).toBeGreaterThanOrEqual(nowMs);
    expect(await s.state()).toEqual(stored);

    // Valid only until an instant the server has passed (an expiry, say).
    const past = await s.commit({
      epoch: epoch!,
      version,
      check: '1',
      at: nowMs - 60_000,
      until: nowMs - 1,
      ...change,
    });
    expect(past.slice(0, 3)).toEqual(['time', epoch, version]);
    // The end of the window is exclusive: until == now is already too late.
    const edge = await s.commit({
      epoch: epoch!,
      version,
      check: '1',
      at: 0,
      until: Number(past[3]),
      ...change,
    });
    expect(edge[0]).toBe('time');
    expect(await s.state()).toEqual(stored);

    // Inside the window it commits.
    const inside = await s.commit({
      epoch: epoch!,
      version,
      check: '1',
      at: nowMs - 60_000,
      until: nowMs + 600_000,
      ...change,
    });
    expect(inside[0]).toBe('ok');
    expect((await s.state()).locks).toEqual({ lk_b: rec('lk_b') });

    // With ARGV[3]='0' the window is the client's business: a future time still commits.
    const trusted = await s.commit({
      epoch: epoch!,
      version: inside[2]!,
      check: '0',
      at: nowMs + 60_000,
      until: nowMs + 120_000,
      fence: 6,
      puts: [['lk_c', rec('lk_c')]],
    });
    expect(trusted[0]).toBe('ok');
    expect((await s.state()).locks).toEqual({ lk_b: rec('lk_b'), lk_c: rec('lk_c') });
  });

  it('a stale snapshot is answered with a sync before the time window is looked at', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const nowMs = Math.floor((await serverMicros(redis)) / 1000);
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 0, puts: [['a', rec('a')]] });
    const answer = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '1',
      at: nowMs + 60_000,
      until: nowMs + 120_000,
      fence: 0,
    });
    expect(answer.slice(0, 3)).toEqual(['sync', epoch, first[2]]);
  });

  it('the fence only grows: a lower fence does not lower it', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const high = 1_700_000_000_000_000;
    const a = await s.commit({ epoch: epoch!, version: '0', fence: high, puts: [['a', rec('a')]] });
    expect((await s.state()).meta.fence).toBe(String(high));
    const b = await s.commit({ epoch: epoch!, version: a[2]!, fence: 5, puts: [['b', rec('b')]] });
    expect(b[0]).toBe('ok');
    const after = await s.state();
    expect(after.meta.fence).toBe(String(high));
    expect(after.locks).toEqual({ a: rec('a'), b: rec('b') });
    // A lower fence alone does not lower it either.
    const c = await s.commit({ epoch: epoch!, version: b[2]!, fence: 0 });
    expect(c[0]).toBe('ok');
    expect((await s.state()).meta.fence).toBe(String(high));
    // And a sync reports the stored fence, exactly (no float formatting).
    const full = await s.sync();
    expect(full[4]).toBe(String(high));
  });

  it('an empty change set validates the snapshot without bumping the version or publishing', async () => {
    const redis = client();
    const subscriber = client();
    const s = store(redis);
    const messages: string[] = [];
    subscriber.on('message', (_channel: string, message: string) => messages.push(message));
    await subscriber.subscribe(s.keys.channel);

    const [, epoch] = await s.sync();
    await watching(redis, s);
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 4, puts: [['a', rec('a')]] });
    const version = first[2]!;
    const stored = await s.state();
    const nowMs = Math.floor((await serverMicros(redis)) / 1000);
    for (const check of ['0', '1'] as const) {
      const answer = await s.commit({
        epoch: epoch!,
        version,
        check,
        at: nowMs - 1000,
        until: nowMs + 600_000,
        fence: 4,
      });
      expect(answer).toHaveLength(4);
      expect(answer.slice(0, 3)).toEqual(['ok', epoch, version]);
    }
    expect(await s.state()).toEqual(stored);
    // The next real commit is the next message: the validations published nothing.
    const next = await s.commit({ epoch: epoch!, version, fence: 4, dels: ['a'] });
    expect(next[0]).toBe('ok');
    await expect
      .poll(() => messages.map((m) => m.split(' ')[0]), { timeout: 10_000 })
      .toEqual([version, next[2]]);
    expect(messages.at(-1)!.split('\n')[0]!.split(' ').slice(3)).toEqual(['a']);
  });

  it('tells the waiters a commit names on their own channels, whether or not anyone watches', async () => {
    const redis = client();
    const subscriber = client();
    const s = store(redis);
    const wake = `{${s.prefix}}:wake:one`;
    const other = `{${s.prefix}}:wake:other`;
    const heard: [string, string][] = [];
    subscriber.on('message', (channel: string, message: string) => heard.push([channel, message]));
    await subscriber.subscribe(s.keys.channel, wake, other);

    const [, epoch] = await s.sync();
    // Nobody watches the store: a commit naming no waiter publishes nothing, one naming a waiter
    // publishes the whole commit to that waiter only, and (the store being small) the whole store
    // after it: '=' and the epoch, the entry, the fence, the tombstones, every record.
    const quiet = await s.commit({ epoch: epoch!, version: '0', fence: 2, puts: [['a', rec('a')]] });
    const named = await s.commit({
      epoch: epoch!,
      version: quiet[2]!,
      fence: 3,
      puts: [['b', rec('b')]],
      dels: ['a'],
      wake: [wake],
      events: '[{"e":1}]',
    });
    expect(named[0]).toBe('ok');
    await expect.poll(() => heard.length, { timeout: 10_000 }).toBe(1);
    const [channel, message] = heard[0]!;
    expect(channel).toBe(wake);
    const lines = message.split('\n');
    // The layout of a published commit (older clients read it as one), its first line ending in
    // '=' and the epoch, the tombstones in full and every record of the store.
    expect(lines[0]!.split(' ').filter((_, i) => i !== 2)).toEqual([
      named[2],
      quiet[2],
      'b',
      'a',
      `=${epoch}`,
    ]);
    expect(lines.slice(1)).toEqual(['3', '[]', rec('b')]);
    // The channels are not mistaken for events: the one event is stored as sent.
    expect((await s.state()).events).toEqual(['[{"e":1}]']);
    // A sync from the first version still answers the delta (read from the list's newest end).
    const delta = await s.commit({ epoch: epoch!, version: quiet[2]!, fence: 0 });
    expect(delta.slice(0, 3)).toEqual(['sync', epoch, named[2]]);
    expect(delta[6]).toBe('delta');
    expect(
      Object.fromEntries([
        [delta[7], delta[8]],
        [delta[9], delta[10]],
      ]),
    ).toEqual({ a: '', b: rec('b') });
  });

  it('informs holders on channels marked ~, and sends the waiters of a large store the commit alone', async () => {
    const redis = client();
    const subscriber = client();
    const s = store(redis);
    const wake = `{${s.prefix}}:wake:one`;
    const holder = `{${s.prefix}}:wake:holder`;
    const heard: [string, string][] = [];
    subscriber.on('message', (channel: string, message: string) => heard.push([channel, message]));
    await subscriber.subscribe(wake, holder);
    const [, epoch] = await s.sync();
    const small = await s.commit({
      epoch: epoch!,
      version: '0',
      fence: 1,
      puts: [['a', rec('a')]],
      wake: [`~${holder}`],
    });
    expect(small[0]).toBe('ok');
    await expect.poll(() => heard.length, { timeout: 10_000 }).toBe(1);
    expect(heard[0]![0]).toBe(holder);
    const told = heard[0]![1].split('\n');
    expect(told[0]!.split(' ').slice(-2)).toEqual([`=${epoch}`, '~']);
    expect(told.slice(1)).toEqual(['1', '[]', rec('a')]);

    // Past 48 fields the whole store is not sent: the waiter gets the commit as a watcher would.
    const many = Array.from({ length: 60 }, (_, i) => [`r${i}`, rec(`r${i}`)] as [string, string]);
    const big = await s.commit({ epoch: epoch!, version: small[2]!, fence: 1, puts: many });
    const named = await s.commit({ epoch: epoch!, version: big[2]!, fence: 1, dels: ['a'], wake: [wake] });
    expect(named[0]).toBe('ok');
    await expect.poll(() => heard.length, { timeout: 10_000 }).toBe(2);
    expect(heard[1]![0]).toBe(wake);
    const lines = heard[1]![1].split('\n');
    expect(lines[0]!.split(' ').filter((_, i) => i !== 2)).toEqual([named[2], big[2], 'a']);
    expect(lines.slice(1)).toEqual(['1', '']);

    // A store holding `field` -> `json` (planted, not written by agent-lock), then a commit that
    // names a waiter: what the waiter hears, as the lines of its message (first line without the
    // commit id), and the two commits' answers.
    const plantedThenNamed = async (name: string, field: string, json: string, next: string) => {
      const other = store(redis);
      const [, otherEpoch] = await other.sync();
      const channel = `{${other.prefix}}:wake:${name}`;
      await subscriber.subscribe(channel);
      const planted = await other.commit({
        epoch: otherEpoch!,
        version: '0',
        fence: 1,
        puts: [[field, json]],
      });
      const woke = await other.commit({
        epoch: otherEpoch!,
        version: planted[2]!,
        fence: 1,
        puts: [[next, rec(next)]],
        wake: [channel],
      });
      expect(woke[0]).toBe('ok');
      const count = heard.length + 1;
      await expect.poll(() => heard.length, { timeout: 10_000 }).toBe(count);
      const message = heard[count - 1]![1].split('\n');
      return {
        planted,
        woke,
        first: message[0]!.split(' ').filter((_, i) => i !== 2),
        rest: message.slice(1),
      };
    };
    // A record stored under another id than its own is never sent as part of a whole store: a sync
    // reads it as unreadable (fail closed), so the waiter is sent the commit alone.
    const odd = await plantedThenNamed('odd', 'x', rec('y'), 'z');
    expect(odd.first).toEqual([odd.woke[2], odd.planted[2], 'z']);
    expect(odd.rest).toEqual(['1', '', rec('z')]);
    // Nor one whose field has a quote in it, which the JSON could otherwise seem to begin with.
    const quoted = await plantedThenNamed('quoted', 'a"z', '{"id":"a"z"}', 'c');
    expect(quoted.first).toEqual([quoted.woke[2], quoted.planted[2], 'c']);
  });

  it('merges a commit of new tickets alone into a newer store, at a place the server gives', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const ticket = (id: string, fence: number) => JSON.stringify({ id, status: 'waiting', fence });
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 5, puts: [['lk', rec('lk')]] });
    // Made on version 0, which is old now: without the flag it is sent back, with it it goes in.
    const plain = await s.commit({
      epoch: epoch!,
      version: '0',
      fence: 6,
      puts: [['wt1', ticket('wt1', 6)]],
    });
    expect(plain[0]).toBe('sync');
    const before = await serverMicros(redis);
    const merged = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 6,
      puts: [['wt1', ticket('wt1', 6)]],
    });
    expect(merged.slice(0, 2)).toEqual(['merged', epoch]);
    // The answer is a sync that already shows the ticket, at a fence past every one before.
    const { locks, meta } = await s.state();
    expect(listed(merged)).toEqual(locks);
    const place = JSON.parse(locks.wt1!).fence as number;
    expect(place).toBeGreaterThanOrEqual(before);
    expect(Number(meta.fence)).toBe(place);
    expect(merged[4]).toBe(meta.fence);
    expect(merged[2]).toBe(meta.version);
    expect(merged[2]).not.toBe(first[2]);

    // A ticket already there (this commit sent again), a deletion, or another epoch: not merged.
    const again = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 7,
      puts: [['wt1', ticket('wt1', 7)]],
    });
    expect(again[0]).toBe('sync');
    const withDel = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 7,
      puts: [['wt2', ticket('wt2', 7)]],
      dels: ['lk'],
    });
    expect(withDel[0]).toBe('sync');
    const otherEpoch = await s.commit({
      epoch: '1',
      version: '0',
      check: '0m',
      fence: 7,
      puts: [['wt3', ticket('wt3', 7)]],
    });
    expect(otherEpoch[0]).toBe('sync');
    expect(Object.keys((await s.state()).locks).sort()).toEqual(['lk', 'wt1']);
  });

  it('does not merge a resent ticket again after it was handed over', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const ticket = JSON.stringify({ id: 'wt1', status: 'waiting', fence: 2 });
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 1, puts: [['lk', rec('lk')]] });
    const merge = {
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 2,
      id: 'merge-1',
      puts: [['wt1', ticket]],
    } as const;
    const merged = await s.commit({ ...merge, puts: [['wt1', ticket]] });
    expect(merged[0]).toBe('merged');
    // The ticket is handed its lock (wt1 gone), then the merge arrives again (a lost reply).
    const handed = await s.commit({
      epoch: epoch!,
      version: merged[2]!,
      fence: 3,
      puts: [['lk_1', rec('lk_1')]],
      dels: ['wt1', 'lk'],
    });
    expect(handed[0]).toBe('ok');
    const before = await s.state();
    const again = await s.commit({ ...merge, puts: [['wt1', ticket]] });
    expect(again[0]).toBe('merged');
    expect(await s.state()).toEqual(before);
    expect(first[0]).toBe('ok');
  });

  // A merge's time: the decision's (ARGV[4]) when the server checks the window; with a clock of the
  // client's own (ARGV[4] is then that clock's, here far from the server's), the send time after 'm'.
  const timings: [string, (serverMs: number) => Pick<CommitArgs, 'check' | 'at' | 'until'>][] = [
    ['in a window the server checks', (ms) => ({ check: '1m', at: ms, until: ms + 1000 })],
    ["on a clock of the client's own", (ms) => ({ check: `0m${ms}`, at: 5_000, until: 6_000 })],
  ];
  it.each(timings)(
    'takes a merge only fresh, %s: a resend after many commits is not applied again',
    async (_, timing) => {
      const redis = client();
      const s = store(redis);
      const [, epoch] = await s.sync();
      const ticket = JSON.stringify({ id: 'wt1', status: 'waiting', fence: 2 });
      await s.commit({ epoch: epoch!, version: '0', fence: 1, puts: [['lk', rec('lk')]] });
      // Decided and sent now. A machine that stalls past the 50 ms gets another try: a merge refused
      // as stale changes nothing.
      const mergeNow = async (args: CommitArgs) => {
        for (let attempt = 1; ; attempt++) {
          const at = Math.floor((await serverMicros(redis)) / 1000) - 1;
          const sent = { ...args, ...timing(at) };
          const reply = await s.commit(sent);
          if (reply[0] === 'merged' || attempt === 5) return { reply, sent, at };
        }
      };
      // On version 0: merged.
      const first = await mergeNow({
        epoch: epoch!,
        version: '0',
        fence: 2,
        id: 'merge-fresh',
        puts: [['wt1', ticket]],
      });
      const { reply: merged, sent: merge, at } = first;
      expect(merged[0]).toBe('merged');
      // The ticket is handed its lock, then more commits go by than a resend is looked for among.
      let version = (
        await s.commit({
          epoch: epoch!,
          version: merged[2]!,
          fence: 3,
          puts: [['lk_1', rec('lk_1')]],
          dels: ['wt1', 'lk'],
        })
      )[2]!;
      for (let k = 0; k < 40; k++) {
        const filler = await s.commit({ epoch: epoch!, version, fence: 3, puts: [[`f${k}`, rec(`f${k}`)]] });
        expect(filler[0]).toBe('ok');
        version = filler[2]!;
      }
      // The merge arrives again, still inside its window but older than a merge may be.
      while (Math.floor((await serverMicros(redis)) / 1000) - at < 60)
        await new Promise((r) => setTimeout(r, 10));
      const before = await s.state();
      const again = await s.commit(merge);
      // Answered as the first time (its delta finds the merge), and nothing applied.
      expect(again[0]).toBe('merged');
      expect(await s.state()).toEqual(before);
      expect(Object.keys(before.locks)).not.toContain('wt1');
      // The same merge decided just now goes in.
      const fresh = (await mergeNow({ ...merge, id: 'merge-now' })).reply;
      expect(fresh[0]).toBe('merged');
      expect(Object.keys((await s.state()).locks)).toContain('wt1');
    },
  );

  describe('rebases a hand-over onto a store that only gained new tickets since its snapshot', () => {
    const lock = (
      id: string,
      agent: string,
      status = 'active',
      parent: string | null = null,
      expires = 9e12,
    ) =>
      JSON.stringify({ id, agent_id: agent, parent_agent_id: parent, expires_at: expires, status, fence: 1 });
    /** A holds lk, B waits (wt_b): the snapshot at `v1` that A's hand-over to B is decided on. */
    async function line() {
      const redis = client();
      const s = store(redis);
      const [, epoch] = await s.sync();
      const first = await s.commit({
        epoch: epoch!,
        version: '0',
        fence: 2,
        puts: [
          ['lk', lock('lk', 'A')],
          ['wt_b', lock('wt_b', 'B', 'waiting')],
        ],
      });
      const v1 = first[2]!;
      const handOver = (extra: Partial<CommitArgs> = {}) =>
        s.commit({
          epoch: epoch!,
          version: v1,
          check: '0r\n"B"',
          fence: 3,
          id: 'hand-over',
          puts: [['lk_b', lock('lk_b', 'B')]],
          dels: ['wt_b', 'lk'],
          ...extra,
        });
      /** A ticket of `agent` committed on `version` (default: the snapshot's), as a queue step would. */
      const ticketSince = (
        id: string,
        agent: string,
        version = v1,
        parent: string | null = null,
        expires = 9e12,
      ) =>
        s.commit({
          epoch: epoch!,
          version,
          fence: 4,
          puts: [[id, lock(id, agent, 'waiting', parent, expires)]],
        });
      return { s, epoch: epoch!, v1, handOver, ticketSince };
    }

    it('applies it, answers rebased with the delta since the snapshot, and once only', async () => {
      const { s, epoch, handOver, ticketSince } = await line();
      expect((await ticketSince('wt_c', 'C'))[0]).toBe('ok');
      const answer = await handOver();
      expect(answer.slice(0, 2)).toEqual(['rebased', epoch]);
      const { locks, meta, changes } = await s.state();
      expect(Object.keys(locks).sort()).toEqual(['lk_b', 'wt_c']);
      expect(listed(answer)).toEqual({ lk: '', wt_b: '', lk_b: locks.lk_b, wt_c: locks.wt_c });
      expect(answer[2]).toBe(meta.version);
      // The fence only grows: the ticket's place (4) stays the store's.
      expect(meta.fence).toBe('4');
      // Sent again (a resend after a lost reply): the same answer, nothing applied twice.
      const again = await handOver();
      expect(again[0]).toBe('rebased');
      expect((await s.state()).changes).toEqual(changes);
    });

    it("applies it over another agent's ticket queued and then refreshed since", async () => {
      const { s, handOver, ticketSince } = await line();
      const queued = await ticketSince('wt_c', 'C');
      await ticketSince('wt_c', 'C', queued[2]!, null, 9.1e12);
      expect((await handOver())[0]).toBe('rebased');
      expect(Object.keys((await s.state()).locks).sort()).toEqual(['lk_b', 'wt_c']);
    });

    it('refuses it (a sync, nothing changed) when anything but new tickets of other agents came since', async () => {
      const cases: [string, (c: Awaited<ReturnType<typeof line>>) => Promise<unknown>][] = [
        [
          'a lock',
          (c) => c.s.commit({ epoch: c.epoch, version: c.v1, fence: 4, puts: [['lk_x', lock('lk_x', 'X')]] }),
        ],
        ['a ticket of the agent handed the lock', (c) => c.ticketSince('wt_c', 'B')],
        ["a ticket of that agent's child", (c) => c.ticketSince('wt_c', 'C', c.v1, 'B')],
        [
          'a ticket since gone',
          async (c) => {
            const put = await c.ticketSince('wt_c', 'C');
            await c.s.commit({ epoch: c.epoch, version: put[2]!, fence: 4, dels: ['wt_c'] });
          },
        ],
        ['a ticket that has lapsed', (c) => c.ticketSince('wt_c', 'C', c.v1, null, 1)],
        ['a refresh of the ticket handed over', (c) => c.ticketSince('wt_b', 'B', c.v1, null, 9.1e12)],
        [
          'more commits than it looks back over (9 tickets)',
          async (c) => {
            let version = c.v1;
            for (let k = 0; k < 9; k++) version = (await c.ticketSince(`wt_c${k}`, 'C', version))[2]!;
          },
        ],
        [
          'a ticket that is no longer waiting',
          (c) => c.s.commit({ epoch: c.epoch, version: c.v1, fence: 4, puts: [['wt_c', lock('wt_c', 'C')]] }),
        ],
        [
          'new tombstones',
          (c) =>
            c.s.commit({
              epoch: c.epoch,
              version: c.v1,
              fence: 4,
              tombstones: '[{"fence":1}]',
              puts: [['wt_c', lock('wt_c', 'C', 'waiting')]],
            }),
        ],
      ];
      for (const [what, since] of cases) {
        const c = await line();
        await since(c);
        const before = await c.s.state();
        const answer = await c.handOver();
        expect([what, answer[0]]).toEqual([what, 'sync']);
        expect(await c.s.state()).toEqual(before);
      }
      // Without the flag, or from another epoch, a new ticket alone is enough to refuse it.
      for (const extra of [{ check: '0' }, { epoch: '1' }]) {
        const c = await line();
        await c.ticketSince('wt_c', 'C');
        expect((await c.handOver(extra))[0]).toBe('sync');
        expect(Object.keys((await c.s.state()).locks).sort()).toEqual(['lk', 'wt_b', 'wt_c']);
      }
    });
  });

  it('keeps the events of at least the last 10000 commits, newest last, and not all of them', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    let version = '0';
    const total = 10_600;
    for (let n = 0; n < total; n++) {
      const answer = await s.commit({ epoch: epoch!, version, fence: 0, events: `[{"n":${n}}]` });
      expect(answer[0]).toBe('ok');
      version = answer[2]!;
    }
    const { events } = await s.state();
    expect(events.length).toBeGreaterThanOrEqual(10_000);
    expect(events.length).toBeLessThan(total);
    const first = total - events.length;
    expect(events).toEqual(Array.from({ length: events.length }, (_, i) => `[{"n":${first + i}}]`));
  });

  describe('after the server lost its data', () => {
    let own: RedisServer;
    beforeAll(async () => {
      own = await startRedis();
    });
    afterAll(async () => {
      await own?.stop();
    });

    for (const how of ['FLUSHALL', 'a restart'] as const) {
      it(`after ${how} the store gets a new epoch and old snapshots are refused`, async () => {
        let redis = client(own.url);
        let s = store(redis);
        const [, epoch] = await s.sync();
        const ok = await s.commit({ epoch: epoch!, version: '0', fence: 50, puts: [['a', rec('a')]] });
        const version = ok[2]!;
        if (how === 'FLUSHALL') await redis.flushall();
        else {
          redis.disconnect();
          await own.restart();
          redis = client(own.url);
          s = store(redis, s.prefix);
        }
        expect(await s.state()).toEqual({ locks: {}, meta: {}, changes: [], events: [] });

        // The old snapshot's commit is refused with a full sync of the new, empty store.
        const answer = await s.commit({ epoch: epoch!, version, fence: 60, puts: [['b', rec('b')]] });
        expect(answer).toHaveLength(7);
        const newEpoch = answer[1]!;
        expect(answer[0]).toBe('sync');
        expect(newEpoch).not.toBe(epoch);
        expect(Number(newEpoch)).toBeGreaterThan(Number(epoch));
        expect(answer.slice(2)).toEqual(['0', answer[3], '0', '[]', 'full']);
        expect(await s.state()).toEqual({
          locks: {},
          meta: { epoch: newEpoch, version: '0', fence: '0', tomb_v: '0' },
          changes: [],
          events: [],
        });

        // At the new epoch it commits, and versions still grow past the old ones (server clock).
        const again = await s.commit({ epoch: newEpoch, version: '0', fence: 60, puts: [['b', rec('b')]] });
        expect(again[0]).toBe('ok');
        expect(Number(again[2])).toBeGreaterThan(Number(version));
      });
    }
  });
});
