/**
 * The commit script's messages to the processes a commit names: waiters woken, holders informed.
 */
import { expect, it } from 'vitest';
import { client, describeScript, rec, store } from './script-harness.js';

describeScript('the commit script: named channels', () => {
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
});
