/**
 * core/domains: scopes that can conflict (or cover one another) always get domains in one line of
 * the domain tree, so that a store comparing only a decision's domains never misses a conflict.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ancestors,
  readKeys,
  recordDomain,
  STORE_DOMAIN,
  scopeDomain,
  scopeDomains,
  TREE_DOMAIN,
  within,
  writeKeys,
} from '../../src/core/domains.js';
import { unreadableRecord } from '../../src/core/lock.js';
import { scopeCovers, scopeFromPattern, scopesOverlap } from '../../src/core/scope.js';

const path = (pattern: string) => scopeFromPattern(pattern, 'path');
const resource = (pattern: string) => scopeFromPattern(pattern, 'resource');

describe('conflict domains', () => {
  it('names a resource by itself, a path scope by its fixed part', () => {
    expect(scopeDomain(resource('@review/pr-1'))).toBe('@review/pr-1');
    expect(scopeDomain(path('src/a/b.ts'))).toBe('/src/a/b.ts');
    expect(scopeDomain(path('src/**/*.ts'))).toBe('/src');
    expect(scopeDomain(path('src/a*/x.ts'))).toBe('/src');
    expect(scopeDomain(path('**/*.ts'))).toBe(TREE_DOMAIN);
    expect(scopeDomain(path('{src,lib}/**'))).toBe(TREE_DOMAIN);
    expect(recordDomain(unreadableRecord('lk_x', 0))).toBe(STORE_DOMAIN);
  });

  it('places every domain below the store, paths below the tree', () => {
    expect(ancestors('/src/a/b.ts')).toEqual([STORE_DOMAIN, TREE_DOMAIN, '/src', '/src/a']);
    expect(ancestors('@review/pr-1')).toEqual([STORE_DOMAIN]);
    expect(ancestors(TREE_DOMAIN)).toEqual([STORE_DOMAIN]);
    expect(ancestors(STORE_DOMAIN)).toEqual([]);
    expect(within('/src/a.ts', '/src')).toBe(true);
    expect(within('/srcx/a.ts', '/src')).toBe(false);
    expect(within('@a', TREE_DOMAIN)).toBe(false);
    expect(within('@a', STORE_DOMAIN)).toBe(true);
  });

  it('keeps the widest domains of a request; none named means compare everything', () => {
    expect(scopeDomains([path('src/a.ts'), path('src/**'), resource('@m')])).toEqual(['/src', '@m']);
    expect(scopeDomains([])).toBeNull();
  });

  it('reads the records at its ancestors and its subtree; writes move every subtree holding them', () => {
    expect(readKeys(['/src/a.ts'])).toEqual(['o*', 'o/', 'o/src', 's/src/a.ts']);
    const moved = new Set<string>();
    writeKeys('/src/b.ts', moved);
    expect([...moved].sort()).toEqual(['o/src/b.ts', 's/', 's/src', 's/src/b.ts']);
    // Siblings never touch what the other reads.
    expect(readKeys(['/src/a.ts']).some((key) => moved.has(key))).toBe(false);
    // A wider lock moves what a narrower decision below it reads, and the other way round.
    const wide = new Set<string>();
    writeKeys('/src', wide);
    expect(readKeys(['/src/a.ts']).some((key) => wide.has(key))).toBe(true);
    expect(readKeys(['/src']).some((key) => moved.has(key))).toBe(true);
  });

  it('gives any two scopes that overlap or cover domains in one line (property)', () => {
    const segment = fc.constantFrom('src', 'lib', 'a', 'b.ts', '*', '**', '*.ts', 'a*', '{a,b}', '?');
    const pattern = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));
    fc.assert(
      fc.property(pattern, pattern, (x, y) => {
        const [a, b] = [path(x), path(y)];
        if (!scopesOverlap(a, b) && !scopeCovers(a, b) && !scopeCovers(b, a)) return;
        const [da, db] = [scopeDomain(a), scopeDomain(b)];
        expect(within(da, db) || within(db, da)).toBe(true);
        // So the later decision's reads meet the earlier one's writes.
        const moved = new Set<string>();
        writeKeys(da, moved);
        expect(readKeys([db]).some((key) => moved.has(key))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
