import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { globMatches, type PathScope, scopeFromPattern } from '../../src/core/scope.js';
import { ENVELOPE_FIELDS, makeSandbox, type Sandbox, STACK_FRAME } from './cli-harness.js';

let box: Sandbox;
beforeEach(() => {
  box = makeSandbox();
});
afterEach(() => {
  box.cleanup();
});

const matches = (pattern: string, path: string) =>
  globMatches(scopeFromPattern(pattern, 'path') as PathScope, path);

describe('explain', () => {
  it('answers DISJOINT, exit 0, for globs no path can match both, and opens no store', async () => {
    const r = await box.run('A', ['explain', 'src/*.ts', 'src/**/*.md']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe("DISJOINT 'src/*.ts' and 'src/**/*.md'");
    expect(r.stdout).toContain('no path can match both');
    expect(r.stderr).toBe('');
    expect(existsSync(box.store)).toBe(false);
  });

  it('answers CONFLICT, exit 1, with a path both match', async () => {
    const r = await box.json('A', ['explain', 'src/**/*.ts', 'src/*/index.*']);
    expect(r.code).toBe(1);
    expect(Object.keys(r.body)).toEqual([...ENVELOPE_FIELDS, 'explain']);
    expect(r.body).toMatchObject({ command: 'explain', status: 'conflict', ok: false, exit_code: 1 });
    const explain = r.body.explain as { witness: string; reason: string; exact: boolean };
    expect(explain).toMatchObject({ reason: 'common_path', exact: true, witness: 'src/a/index.ts' });
    expect(matches('src/**/*.ts', explain.witness) && matches('src/*/index.*', explain.witness)).toBe(true);
    const text = await box.run('A', ['explain', 'src/**/*.ts', 'src/*/index.*']);
    expect(text.stdout).toContain('both match src/a/index.ts');
  });

  it('says why: fixed parts that part ways, a plain path a glob misses, a resource and a path', async () => {
    const reason = async (a: string, b: string) =>
      ((await box.json('A', ['explain', a, b])).body.explain as { reason: string }).reason;
    expect(await reason('src/**', 'docs/*.md')).toBe('fixed_parts_disjoint');
    expect(await reason('src/*.ts', 'src/lib/a.ts')).toBe('glob_misses_path');
    expect(await reason('src/*.ts', 'src/a.ts')).toBe('glob_matches_path');
    expect(await reason('@merge', 'src/**')).toBe('resource_and_path');
    expect(await reason('docs/*.{md,txt}', 'docs/[a-c]*.png')).toBe('no_common_path');
  });

  it('answers CONFLICT for literal braces holding globstars, and never calls a DISJOINT conservative', async () => {
    // picomatch reads `{a/**/**}` as matching `{a/b}`: once answered DISJOINT, "judged conservatively".
    for (const [a, b] of [
      ['{a/**/**}', '*/*'],
      ['{a/**/**}', '{a/b}'],
      ['{a/**/b,c}', 'a/b'],
    ] as const) {
      const r = await box.run('A', ['explain', a, b]);
      expect(r.code, `${a} and ${b}`).toBe(1);
      expect(r.stdout.split('\n')[0]).toMatch(/^CONFLICT /);
    }
    const r = await box.run('A', ['explain', '{a,b/**/c}.x', 'q/*']);
    expect(r.stdout.split('\n')[0]).toMatch(/^DISJOINT /);
    expect(r.stdout).not.toContain('conservatively');
  });

  it('refuses three stars in a row with one ERROR line, exit 2', async () => {
    const r = await box.run('A', ['explain', 'x/***.b.c', 'x/*.b/*']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'ERROR: alock: scope x/***.b.c: *** is not a glob here (write * for any name within a folder, or ** for any folders, e.g. src/**/*.ts)\n',
    );
  });

  it('normalises scopes as acquire does: an existing folder is everything below it', async () => {
    const r = await box.json('A', ['explain', './src/lib', 'src/*.ts']);
    expect(r.body.status).toBe('disjoint');
    const explain = r.body.explain as { scopes: { scope: string }[] };
    expect(explain.scopes.map((s) => s.scope)).toEqual(['src/lib/**', 'src/*.ts']);
  });

  it('refuses a missing scope or one outside the tree with one ERROR line, exit 2', async () => {
    for (const argv of [
      ['explain', 'src/*.ts'],
      ['explain', 'src/*.ts', '../x'],
      ['explain', '', 'src/a.ts'],
    ]) {
      const r = await box.run('A', argv);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^ERROR: alock: .+ \(.+\)\n$/);
      expect(r.stderr).not.toMatch(STACK_FRAME);
    }
  });
});

describe('glob locks that no path shares', () => {
  it('grants globs by file kind side by side, and still refuses one that meets a held glob', async () => {
    expect((await box.run('a1', ['acquire', 'src/*.ts'])).code).toBe(0);
    const md = await box.run('b1', ['acquire', 'src/**/*.md']);
    expect(md.code).toBe(0);
    expect(md.stdout.split('\n')[0]).toBe('ACQUIRED src/**/*.md');
    const held = await box.run('c1', ['acquire', 'src/*.{ts,tsx}']);
    expect(held.code).toBe(1);
    expect(held.stdout).toContain('src/*.ts');
    expect((await box.run('c1', ['check', 'docs/*.png', 'src/lib/*.ts'])).stdout.split('\n')[0]).toMatch(
      /^FREE/,
    );
  });
});
