/**
 * The commit script's compare-and-set: new stores, commits, versions, stale snapshots and their
 * syncs, resent commits, the time window, the fence, validation and the history it keeps.
 */
import { expect, it } from 'vitest';
import {
  type CommitArgs,
  client,
  describeScript,
  listed,
  rec,
  serverMicros,
  store,
  watching,
} from './script-harness.js';

describeScript('the commit script: compare-and-set', () => {
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
});
