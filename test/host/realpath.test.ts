// The scope parser's real path of a path below the tree (fsProbe.realpath with the root: one lstat
// per component below it) must answer exactly as the long way (every component from `/`, and again
// for each parent of a part that is not there), on small generated trees of folders, files and
// symlinks: inside and outside the tree, relative and absolute, dangling, chained, looping, with
// `..` in their targets.
import {
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { fsProbe } from '../../src/host/tree.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-realpath-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

type Entry =
  | { kind: 'dir' | 'file'; at: string[] }
  | { kind: 'link'; at: string[]; target: string[]; absolute: boolean };

const place = fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 3 });
// A link's target: names and `..`, read from the link's folder, or from the tree's parent (absolute),
// where `out` is a folder outside the tree.
const target = fc.array(fc.constantFrom('a', 'b', 'c', '..', 'out'), { minLength: 1, maxLength: 4 });
const entry: fc.Arbitrary<Entry> = fc.oneof(
  fc.record({ kind: fc.constantFrom('dir' as const, 'file' as const), at: place }),
  fc.record({ kind: fc.constant('link' as const), at: place, target, absolute: fc.boolean() }),
);

let trees = 0;
/** Builds the entries under a fresh tree; those whose folder cannot be made are left out. */
function build(entries: readonly Entry[]): { root: string; top: string } {
  const top = path.join(base, `t${trees++}`);
  const root = path.join(top, 'tree');
  mkdirSync(path.join(top, 'out', 'a'), { recursive: true });
  mkdirSync(root);
  for (const e of entries) {
    const where = path.join(root, ...e.at);
    try {
      mkdirSync(path.dirname(where), { recursive: true });
      if (e.kind === 'dir') mkdirSync(where);
      else if (e.kind === 'file') writeFileSync(where, '');
      else if (e.kind === 'link')
        symlinkSync(e.absolute ? path.join(top, ...e.target) : e.target.join('/'), where);
    } catch {
      // taken already, or below a file or a dangling link: this tree does without it
    }
  }
  return { root, top };
}

describe('real paths below the tree', () => {
  it('are what the long way finds, and so is whether they are folders', () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 10 }),
        fc.array(place, { minLength: 1, maxLength: 4 }),
        (entries, queries) => {
          const { root, top } = build(entries);
          try {
            for (const q of queries) {
              const absolute = path.join(root, ...q);
              const fast = fsProbe.realpath(absolute, root);
              const fastDir = fsProbe.isDirectory(fast); // from realpath's own look, where it had one
              expect(fast).toBe(fsProbe.realpath(absolute));
              expect(fastDir).toBe(fsProbe.isDirectory(fast)); // looked at again
            }
          } finally {
            rmSync(top, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('answers whether the path is a folder from its own look only once, right after it', () => {
    const { root, top } = build([
      { kind: 'dir', at: ['a'] },
      { kind: 'file', at: ['b'] },
    ]);
    try {
      const dir = fsProbe.realpath(path.join(root, 'a'), root);
      expect(fsProbe.isDirectory(dir)).toBe(true);
      rmSync(dir, { recursive: true });
      writeFileSync(dir, '');
      expect(fsProbe.isDirectory(dir)).toBe(false); // looked at again, not the remembered answer
      expect(fsProbe.isDirectory(fsProbe.realpath(path.join(root, 'b'), root))).toBe(false);
      expect(fsProbe.isDirectory(fsProbe.realpath(path.join(root, 'new', 'x'), root))).toBe(false);
    } finally {
      rmSync(top, { recursive: true, force: true });
    }
  });

  it('resolves a symlink below the tree, the tree itself and a path outside it', () => {
    const { root, top } = build([{ kind: 'link', at: ['up'], target: ['out'], absolute: true }]);
    try {
      expect(fsProbe.realpath(root, root)).toBe(root);
      expect(fsProbe.realpath(path.join(top, 'out', 'a'), root)).toBe(path.join(top, 'out', 'a'));
      expect(fsProbe.realpath(path.join(root, 'up', 'a', 'x.ts'), root)).toBe(
        path.join(top, 'out', 'a', 'x.ts'),
      );
    } finally {
      rmSync(top, { recursive: true, force: true });
    }
  });
});

describe('a tree moved while a process has it open', () => {
  it('is judged as it is now: swapped for a symlink, its paths are outside the tree opened', () => {
    const top = path.join(base, `swap${trees++}`);
    const root = path.join(top, 'repo');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'a.ts'), '');
    const file = path.join(root, 'a.ts');
    expect(fsProbe.realpath(file, root)).toBe(file);
    renameSync(root, path.join(top, 'repo2'));
    symlinkSync(path.join(top, 'repo2'), root);
    // What a process opened now calls the tree: the same file must not be named below the old one.
    expect(fsProbe.realpath(file, root)).toBe(path.join(top, 'repo2', 'a.ts'));
    expect(fsProbe.realpath(file, root)).toBe(fsProbe.realpath(file));
  });

  it('takes paths that are not tidy the long way', () => {
    const { root, top } = build([{ kind: 'dir', at: ['a'] }]);
    try {
      for (const untidy of ['a//x.ts', 'a/./x.ts', 'a/../a/x.ts', 'a/']) {
        const absolute = `${root}/${untidy}`;
        expect(fsProbe.realpath(absolute, root)).toBe(fsProbe.realpath(absolute));
      }
    } finally {
      rmSync(top, { recursive: true, force: true });
    }
  });
});
