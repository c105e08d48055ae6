// Section (k), part 3: messages per commit. Every worker holds a few leases (locks.hold, so each
// listens for changes) and churns acquire+release of other @resources of its own; the figure is the
// pub/sub messages the workers receive over the commits the store made.
// redis-server 7.0 has no INFO field that counts deliveries (commandstats counts PUBLISH calls,
// shown beside, and PUBSUB NUMSUB the subscribers), so each worker counts the messages its
// connections receive; commits are the store's history entries added (XINFO STREAM), one per
// commit, checked against the workers' own count (one per acquire, one per release).
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Verdict } from '../case.js';
import { atMost } from '../case.js';
import type { Settings } from '../settings.js';
import { TARGETS } from '../settings.js';
import { round } from '../stats.js';
import type { Pool } from './pool.js';

export const LEASES_HELD = 4;

export interface Messages {
  ran: true;
  processes: number;
  leasesPerProcess: number;
  seconds: number;
  pairs: number;
  commits: number;
  commitsCountedBy: string;
  workerCommits: number;
  messages: number;
  messagesPerCommit: number | null;
  publishCalls: number;
  publishPerCommit: number | null;
  evalshaPerCommit: number | null;
  channels: number;
  subscriptions: number;
  verdicts: Verdict[];
}

/** calls= of each command in INFO commandstats. */
async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const m of String(await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls[m[1]!] = Number(m[2]);
  return calls;
}

/** Entries ever added to the streams under `prefix` (XINFO STREAM entries-added, Redis 7+). */
async function streamEntriesAdded(client: Redis, prefix: string): Promise<number | null> {
  let total = 0;
  let found = false;
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 100, 'TYPE', 'stream');
    cursor = next;
    for (const key of keys) {
      const info = (await client.xinfo('STREAM', key)) as unknown[];
      const at = info.indexOf('entries-added');
      if (at >= 0) {
        total += Number(info[at + 1]);
        found = true;
      }
    }
  } while (cursor !== '0');
  return found ? total : null;
}

/** Runs the part with every worker of `pool`, and closes them. */
export async function messagesPerCommit(
  pool: Pool,
  redisUrl: string,
  prefix: string,
  settings: Settings,
): Promise<Messages> {
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  try {
    await pool.request(pool.workers, { type: 'hold', leases: LEASES_HELD }, 'held');
    // The messages of the holds' own commits, then a zero point taken while nobody commits: every
    // worker starts counting at once, before the first churn commit.
    await sleep(300);
    await pool.request(pool.workers, { type: 'count' }, 'counted');
    // Subscriptions as the server sees them while the leases are held.
    const channels = ((await client.pubsub('CHANNELS', `*${prefix}*`)) as string[]).sort();
    const numsub = channels.length === 0 ? [] : ((await client.pubsub('NUMSUB', ...channels)) as unknown[]);
    let subscriptions = 0;
    for (let i = 1; i < numsub.length; i += 2) subscriptions += Number(numsub[i]);
    const callsBefore = await commandCalls(client);
    const addedBefore = await streamEntriesAdded(client, prefix);
    const churned = await pool.request(
      pool.workers,
      { type: 'churn', seconds: settings.scalingChurnSeconds },
      'churned',
    );
    // Messages of the last commits may still be on their way.
    await sleep(300);
    const counted = await pool.request(pool.workers, { type: 'count' }, 'counted');
    const callsAfter = await commandCalls(client);
    const addedAfter = await streamEntriesAdded(client, prefix);
    await pool.request(pool.workers, { type: 'close' }, 'closed');
    const delta = (name: string) => (callsAfter[name] ?? 0) - (callsBefore[name] ?? 0);
    const pairs = churned.reduce((n, c) => n + c.pairs, 0);
    // Commits: the store's own count (one history entry per commit that records events, and every
    // acquire and release records one), else two per acquire+release the workers made.
    const serverCommits = addedBefore === null || addedAfter === null ? null : addedAfter - addedBefore;
    const commits = serverCommits ?? 2 * pairs;
    const messages = counted.reduce((n, c) => n + c.messages, 0);
    const perCommit = commits === 0 ? null : round(messages / commits);
    return {
      ran: true,
      processes: pool.workers.length,
      leasesPerProcess: LEASES_HELD,
      seconds: settings.scalingChurnSeconds,
      pairs,
      commits,
      commitsCountedBy:
        serverCommits === null ? 'workers (2 per acquire+release)' : 'server (history entries added)',
      workerCommits: 2 * pairs,
      messages,
      messagesPerCommit: perCommit,
      publishCalls: delta('publish'),
      publishPerCommit: commits === 0 ? null : round(delta('publish') / commits),
      evalshaPerCommit: commits === 0 ? null : round(delta('evalsha') / commits),
      channels: channels.length,
      subscriptions,
      verdicts: [
        atMost('pub/sub messages delivered per commit', perCommit, TARGETS.scaling.messagesPerCommitMax, ''),
      ],
    };
  } finally {
    client.disconnect();
  }
}
