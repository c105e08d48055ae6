/**
 * The built bundles name the Redis commit script by a SHA-1 computed at build time (a hook on Redis
 * would otherwise hash ~19 KB of Lua on every call). A stale hash would go unnoticed but slow: every
 * EVALSHA would answer NOSCRIPT and send the script again. So each bundle that carries the script
 * carries its real hash, and no other.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMIT_LUA } from '../../src/backends/redis/commit-script.js';
import { commitLuaSha1 } from '../../src/backends/redis/connection.js';

const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
const sha1 = createHash('sha1').update(COMMIT_LUA, 'utf8').digest('hex');

describe('the commit script hash', () => {
  it('is the SHA-1 of the script, unbundled', () => {
    expect(commitLuaSha1()).toBe(sha1);
  });

  it.each(['index.js', 'lazy/redis-store.js', 'lazy/redis-store.cjs'])(
    'is built into %s as the SHA-1 of the script it carries',
    (bundle) => {
      const text = readFileSync(path.join(dist, bundle), 'utf8');
      // (Booleans: a failure must not print a whole bundle.) The script's first line: this bundle
      // carries the script.
      expect(
        text.includes('local store, changes, history, domains = KEYS[1], KEYS[2], KEYS[3], KEYS[4]'),
      ).toBe(true);
      expect(text.includes(`"${sha1}"`)).toBe(true);
      expect(text.includes('__COMMIT_LUA_SHA1__')).toBe(false);
    },
  );
});

describe("ioredis's command table", () => {
  it.each(['lazy/redis-store.js', 'lazy/redis-store.cjs'])(
    'is built into %s on a plain object under the class prototype (one store per command there cost ~20 ms a process)',
    (bundle) => {
      const text = readFileSync(path.join(dist, bundle), 'utf8');
      expect(text.match(/setPrototypeOf\([\w$]+\.prototype,[\w$]+\)/g)?.length).toBe(1);
    },
  );
});
