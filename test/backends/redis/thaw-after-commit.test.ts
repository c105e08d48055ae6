/**
 * Files an `--enforce` lock froze are thawed from what was committed, after the commit. A Redis
 * store decides again after a lost compare-and-set; a handle deciding on a stale snapshot may see a
 * lease as lapsed that its holder has just renewed. Thawing inside that first run (as it once did)
 * made the files of a live lock writable while `mine` still showed them frozen.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { type Locks, openLocks } from '../../../src/index.js';
import { uniquePrefix } from '../../race/helpers.js';
import { describeRedis, redisForSuite } from './server.js';

describeRedis('redis store: enforced files thaw after the commit', () => {
  const server = redisForSuite();
  const roots: string[] = [];
  const handles: Locks[] = [];
  afterEach(async () => {
    for (const handle of handles.splice(0)) await handle.close();
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  it('a handle on a stale snapshot that loses the race leaves a renewed lease frozen', async () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-rthaw-')));
    roots.push(root);
    const tree = path.join(root, 'tree');
    mkdirSync(path.join(tree, 'src'), { recursive: true });
    const file = path.join(tree, 'src', 'a.ts');
    writeFileSync(file, 'a', { mode: 0o644 });
    const env = {
      AGENT_LOCK_DIR: path.join(root, 'store'),
      AGENT_LOCK_BACKEND: 'redis',
      AGENT_LOCK_REDIS_URL: server().url,
      AGENT_LOCK_REDIS_PREFIX: uniquePrefix('thaw'),
    };
    // The second handle's clock can be moved ahead: it then sees the first lease as lapsed.
    let ahead = 0;
    const holder = await openLocks({
      dir: tree,
      env: { ...env, AGENT_ID: 'holder', AGENT_PARENT_ID: 'none' },
    });
    const other = await openLocks({
      dir: tree,
      env: { ...env, AGENT_ID: 'other', AGENT_PARENT_ID: 'none' },
      clock: () => Date.now() + ahead,
    });
    handles.push(holder, other);
    const mode = () => statSync(file).mode & 0o777;

    expect((await holder.acquire('src/a.ts', { enforce: true, ttl: 5 })).status).toBe('acquired');
    expect(mode()).toBe(0o444);
    // `other` reads the store once (its snapshot now holds the 5-second lease)...
    expect((await other.list()).locks).toHaveLength(1);
    // ...the holder renews for an hour, which `other` does not hear of...
    expect((await holder.renew('src/a.ts', { ttl: 3600 })).status).toBe('renewed');
    // ...and `other`, a minute ahead, decides on its stale snapshot: the lease looks lapsed, the
    // commit loses to the renewal, and the decision made again finds the lease alive.
    ahead = 60_000;
    expect((await other.acquire('@elsewhere')).status).toBe('acquired');

    expect((await holder.mine()).locks.map((lock) => lock.scope)).toEqual(['src/a.ts']);
    expect(mode(), 'the live lock’s file was made writable').toBe(0o444);
    // The lease's own end still thaws it, after its commit.
    expect((await holder.release('src/a.ts')).status).toBe('released');
    expect(mode()).toBe(0o644);
  });
});
