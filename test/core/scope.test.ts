import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentLockError } from '../../src/core/errors.js';
import {
  parseScope,
  type Scope,
  type ScopeContext,
  scopeCovers,
  scopesOverlap,
} from '../../src/core/scope.js';
import { fsProbe } from '../../src/host/tree.js';

// A real tree on disk: `<tmp>/repo` is the tree, `<tmp>/repo-other` its sibling (the prefix trap),
// `<tmp>/outside` somewhere else, with symlinks from inside the tree pointing at each.
let tmp = '';
let root = '';

beforeAll(() => {
  tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-scope-')));
  root = path.join(tmp, 'repo');
  for (const dir of ['repo/src/lib', 'repo/docs', 'repo/.plans', 'repo-other', 'outside']) {
    mkdirSync(path.join(tmp, dir), { recursive: true });
  }
  writeFileSync(path.join(root, 'src/a.ts'), '');
  writeFileSync(path.join(root, '.env'), '');
  symlinkSync(path.join(tmp, 'outside'), path.join(root, 'out-link'));
  symlinkSync(path.join(tmp, 'outside/nowhere'), path.join(root, 'dangling-out'));
  symlinkSync(path.join(tmp, 'repo-other'), path.join(root, 'sib-link'));
  symlinkSync(path.join(root, 'src'), path.join(root, 'in-link'));
  symlinkSync(path.join(root, 'src/not-yet'), path.join(root, 'dangling-in'));
  // `..` after these leaves the link's target: src/to-docs/.. is the root, src/esc/.. is outside.
  symlinkSync(path.join(root, 'docs'), path.join(root, 'src/to-docs'));
  mkdirSync(path.join(tmp, 'outside/sub'));
  symlinkSync(path.join(tmp, 'outside/sub'), path.join(root, 'src/esc'));
});

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function ctx(sub = ''): ScopeContext {
  return { cwd: path.join(root, sub), root, probe: fsProbe };
}

function parse(input: string, sub = ''): Scope {
  return parseScope(input, ctx(sub));
}

function parseError(input: string, sub = ''): AgentLockError {
  try {
    parse(input, sub);
  } catch (error) {
    expect(error).toBeInstanceOf(AgentLockError);
    return error as AgentLockError;
  }
  throw new Error(`expected ${JSON.stringify(input)} to be refused`);
}

describe('parseScope: path scopes', () => {
  // [input, folder it is typed in (relative to the tree root), pattern, glob, fixed part]
  const cases: [string, string, string, boolean, string[]][] = [
    // The whole tree.
    ['.', '', '**', true, []],
    ['*', '', '**', true, []],
    ['**', '', '**', true, []],
    ['./', '', '**', true, []],
    // Existing folders become folder/**; a trailing slash means a folder even before it exists.
    ['src', '', 'src/**', true, ['src']],
    ['src/', '', 'src/**', true, ['src']],
    ['src/lib', '', 'src/lib/**', true, ['src', 'lib']],
    ['not-yet-made/', '', 'not-yet-made/**', true, ['not-yet-made']],
    // Plain files, existing or not yet.
    ['src/a.ts', '', 'src/a.ts', false, ['src', 'a.ts']],
    ['src/new-file.ts', '', 'src/new-file.ts', false, ['src', 'new-file.ts']],
    // Normalisation of ./, doubled slashes and ..
    ['./src/a.ts', '', 'src/a.ts', false, ['src', 'a.ts']],
    ['src//a.ts', '', 'src/a.ts', false, ['src', 'a.ts']],
    ['.//src///a.ts', '', 'src/a.ts', false, ['src', 'a.ts']],
    ['src/lib/../a.ts', '', 'src/a.ts', false, ['src', 'a.ts']],
    ['docs/../src/lib/', '', 'src/lib/**', true, ['src', 'lib']],
    ['./src//*.ts', '', 'src/*.ts', true, ['src']],
    ['src/lib/../*.ts', '', 'src/*.ts', true, ['src']],
    // Globs and their fixed parts.
    ['src/*.ts', '', 'src/*.ts', true, ['src']],
    ['src/**/*.test.ts', '', 'src/**/*.test.ts', true, ['src']],
    ['src/lib/**', '', 'src/lib/**', true, ['src', 'lib']],
    ['**/*.md', '', '**/*.md', true, []],
    ['src/?.ts', '', 'src/?.ts', true, ['src']],
    ['src/[ab].ts', '', 'src/[ab].ts', true, ['src']],
    ['src/{a,b}.ts', '', 'src/{a,b}.ts', true, ['src']],
    ['src/lib*/x.ts', '', 'src/lib*/x.ts', true, ['src']],
    // Dot files and dot folders are ordinary scopes.
    ['.plans/**', '', '.plans/**', true, ['.plans']],
    ['.plans', '', '.plans/**', true, ['.plans']],
    ['.plans/todo.md', '', '.plans/todo.md', false, ['.plans', 'todo.md']],
    ['.env', '', '.env', false, ['.env']],
    // Relative to the current folder.
    ['.', 'src', 'src/**', true, ['src']],
    ['a.ts', 'src', 'src/a.ts', false, ['src', 'a.ts']],
    ['*.ts', 'src', 'src/*.ts', true, ['src']],
    ['lib', 'src', 'src/lib/**', true, ['src', 'lib']],
    ['../docs/x.md', 'src', 'docs/x.md', false, ['docs', 'x.md']],
    ['..', 'src', '**', true, []],
    ['../**', 'src/lib', 'src/**', true, ['src']],
    // A symlink inside the tree pointing inside the tree is resolved to its target.
    ['in-link/a.ts', '', 'src/a.ts', false, ['src', 'a.ts']],
    ['in-link', '', 'src/**', true, ['src']],
    ['in-link/*.ts', '', 'src/*.ts', true, ['src']],
    ['dangling-in', '', 'src/not-yet', false, ['src', 'not-yet']],
  ];

  it.each(cases)('parses %j (typed in /%s) as %j', (input, sub, pattern, glob, fixed) => {
    expect(parse(input, sub)).toEqual({ kind: 'path', pattern, glob, fixed });
  });

  it('accepts absolute paths inside the tree', () => {
    expect(parse(path.join(root, 'src/a.ts'))).toMatchObject({ pattern: 'src/a.ts', glob: false });
    expect(parse(root)).toMatchObject({ pattern: '**', glob: true });
    expect(parse(`${root}/`)).toMatchObject({ pattern: '**', glob: true });
  });
});

describe('parseScope: resources', () => {
  it.each(['@merge', '@git/index', '@review/pr-123', '@a', `@${'x'.repeat(200)}`, '@ünïcode'])(
    'parses %j as a resource',
    (input) => {
      expect(parse(input)).toEqual({ kind: 'resource', pattern: input });
    },
  );

  it('a resource name is not a path: it is never resolved against the tree', () => {
    expect(parse('@../../etc/passwd')).toEqual({ kind: 'resource', pattern: '@../../etc/passwd' });
  });

  const bad: [string, string][] = [
    ['empty name', '@'],
    ['a space', '@a b'],
    ['a tab', '@a\tb'],
    ['a newline', '@a\nb'],
    ['a leading space', '@ merge'],
    ['a control character', '@a\u0007b'],
    ['an escape character', '@a\u001bb'],
    ['a DEL character', '@a\u007fb'],
    ['201 characters', `@${'x'.repeat(201)}`],
  ];

  it.each(bad)('refuses a resource name with %s', (_why, input) => {
    const error = parseError(input);
    expect(error.code).toBe('E_RESOURCE_INVALID');
  });
});

describe('parseScope: refusals', () => {
  it.each(['', ' ', '   ', '\t', '\n'])(
    'refuses the blank scope %j and says how to claim everything',
    (input) => {
      const error = parseError(input);
      expect(error.code).toBe('E_SCOPE_EMPTY');
      expect(error.message).toBe('empty scope: pass ** to claim the whole tree');
    },
  );

  // [why, input, folder typed in, where a symlink on the way leads (below the temporary folder)]
  const outside: [string, string, string, string?][] = [
    ['the parent of the root', '..', ''],
    ['a path above the root', '../x.ts', ''],
    ['a path above the root from a subfolder', '../../x.ts', 'src'],
    ['an absolute path elsewhere', '/etc/passwd', ''],
    ['the sibling-prefix trap', '../repo-other/x.ts', ''],
    ['the sibling-prefix trap, as a folder', '../repo-other', ''],
    ['the sibling-prefix trap, as a glob', '../repo-other/**', ''],
    ['a glob whose fixed part is above the root', '../*.ts', ''],
    ['a symlink pointing out', 'out-link', '', 'outside'],
    ['a file below a symlink pointing out', 'out-link/x.ts', '', 'outside/x.ts'],
    ['a glob below a symlink pointing out', 'out-link/**', '', 'outside'],
    ['a dangling symlink pointing out', 'dangling-out', '', 'outside/nowhere'],
    ['a path below a dangling symlink pointing out', 'dangling-out/x.ts', '', 'outside/nowhere/x.ts'],
    ['a symlink to the sibling folder', 'sib-link/a.ts', '', 'repo-other/a.ts'],
    ['the parent through a subfolder', 'src/../..', ''],
  ];

  it.each(outside)('refuses %s (%j)', (_why, input, sub, leadsTo) => {
    const error = parseError(input, sub);
    expect(error.code).toBe('E_SCOPE_OUTSIDE_TREE');
    const via = leadsTo === undefined ? '' : ` (a symlink on the way leads to ${path.join(tmp, leadsTo)})`;
    expect(error.message).toBe(`${input} is outside the tree ${root}${via}`);
  });

  it('refuses the sibling folder given as an absolute path', () => {
    const input = path.join(tmp, 'repo-other', 'a.ts');
    const error = parseError(input);
    expect(error.code).toBe('E_SCOPE_OUTSIDE_TREE');
    expect(error.message).toBe(`${input} is outside the tree ${root}`);
  });

  it.each([
    'src/*/../x.ts',
    'src/**/..',
    '**/../x',
    'src/*.ts/../../..',
    'src/{a,b}/../c',
    'src/{..,x}/a',
    'src/{x,..}/a',
  ])('refuses %j: a .. after a wildcard', (input) => {
    const error = parseError(input);
    expect(error.code).toBe('E_SCOPE_INVALID');
    expect(error.message).toContain('..');
  });

  // picomatch reads a later `.` as any character after such a run (`x/***.d.ts` matched `x/y.d/ts`).
  it.each(['x/***.d.ts', '***', 'src/a***', '********/a.', 'src/{a,***}.ts'])(
    'refuses %j: three stars in a row are no glob here',
    (input) => {
      const error = parseError(input);
      expect(error.code).toBe('E_SCOPE_INVALID');
      expect(error.message).toBe(`scope ${input}: *** is not a glob here`);
    },
  );

  it.each(['src/a\u0001.ts', 'src/\u001b[31m', 'src/a\nb'])(
    'refuses the control character in %j',
    (input) => {
      expect(parseError(input).code).toBe('E_SCOPE_INVALID');
    },
  );
});

describe('scopesOverlap', () => {
  // [a, b, conflict?]
  const cases: [string, string, boolean][] = [
    // Identical scopes.
    ['src/a.ts', 'src/a.ts', true],
    ['src/**', 'src/**', true],
    ['src/*.ts', 'src/*.ts', true],
    // Plain path against plain path.
    ['src/a.ts', 'src/b.ts', false],
    // Plain path against glob: exact matching.
    ['src/a.ts', 'src/*.ts', true],
    ['src/a.js', 'src/*.ts', false],
    ['src/lib/a.ts', 'src/*.ts', false],
    ['src/lib/a.ts', 'src/**/*.ts', true],
    ['src/a.ts', 'src/**', true],
    ['docs/a.ts', 'src/**', false],
    ['src/a.ts', '**', true],
    ['src/b.ts', 'src/{a,b}.ts', true],
    ['src/c.ts', 'src/{a,b}.ts', false],
    ['src/.hidden', 'src/**', true],
    ['.plans/todo.md', '.plans/**', true],
    ['.env', '**', true],
    // Glob against glob: exactly when some path matches both.
    ['src/**', 'src/lib/**', true],
    ['src/**', 'src/lib/*.ts', true],
    ['src/*.ts', 'src/lib/**', false], // `*` stays in src/, the other only below src/lib
    ['src/*.ts', 'src/*.js', false],
    ['src/*.ts', 'src/**/*.md', false],
    ['src/*.ts', 'src/a.*', true],
    ['src/**', 'docs/**', false],
    ['src/lib/**', 'src/libx/**', false], // segment by segment, not string prefix
    ['src/lib/**', 'src/other/*.ts', false],
    ['**', 'docs/**', true], // an empty fixed part contains everything
    ['**/*.md', 'src/lib/**', true],
    ['.plans/**', 'src/**', false],
    // Resources.
    ['@merge', '@merge', true],
    ['@merge', '@merge2', false],
    ['@review/pr-1', '@review/pr-12', false],
    ['@merge', '**', false],
    ['@src', 'src/**', false],
  ];

  it.each(cases)('%j against %j conflicts: %s', (a, b, expected) => {
    expect(scopesOverlap(parse(a), parse(b))).toBe(expected);
    expect(scopesOverlap(parse(b), parse(a))).toBe(expected);
  });

  it('a resource never conflicts with a path scope, even one spelled like it', () => {
    writeFileSync(path.join(root, '@merge'), '');
    try {
      // `./@merge` is a file in the tree; `@merge` is the store's resource.
      const file = parse('./@merge');
      expect(file).toMatchObject({ kind: 'path', pattern: '@merge' });
      expect(scopesOverlap(file, parse('@merge'))).toBe(false);
    } finally {
      rmSync(path.join(root, '@merge'));
    }
  });
});

describe('scopeCovers', () => {
  // [outer, inner, covers?]
  const cases: [string, string, boolean][] = [
    ['src/**', 'src/a.ts', true],
    ['src/**', 'src/lib/**', true],
    ['src/**', 'src/lib/*.ts', true],
    ['src/**', 'src/lib/deep/a.ts', true],
    ['**', 'docs/*.md', true],
    ['**', 'src/a.ts', true],
    ['src/*.ts', 'src/a.ts', true],
    ['src/*.ts', 'src/**', false],
    ['src/*.ts', 'src/lib/a.ts', false],
    ['src/*.ts', 'src/lib/*.ts', false],
    ['src/lib/**', 'src/**', false],
    ['src/lib/**', 'src/a.ts', false],
    ['src/a.ts', 'src/**', false],
    ['src/a.ts', 'src/b.ts', false],
    ['docs/**', 'src/a.ts', false],
    // A scope covers itself.
    ['src/**', 'src/**', true],
    ['src/*.ts', 'src/*.ts', true],
    ['src/a.ts', 'src/a.ts', true],
    ['**', '**', true],
    ['@merge', '@merge', true],
    // Resources and paths never cover each other.
    ['@merge', '@merge2', false],
    ['**', '@merge', false],
    ['@merge', 'src/a.ts', false],
  ];

  it.each(cases)('%j covers %j: %s', (outer, inner, expected) => {
    expect(scopeCovers(parse(outer), parse(inner))).toBe(expected);
  });

  it('whatever one scope covers, it also conflicts with', () => {
    for (const [outer, inner, covers] of cases) {
      if (covers) expect(scopesOverlap(parse(outer), parse(inner))).toBe(true);
    }
  });
});

describe('folder names that look like patterns', () => {
  // Next.js route groups and dynamic segments: real folders named `(marketing)` and `[slug]`.
  beforeAll(() => {
    mkdirSync(path.join(root, 'app/(marketing)'), { recursive: true });
    mkdirSync(path.join(root, 'app/[slug]'), { recursive: true });
    mkdirSync(path.join(root, 'app/s'), { recursive: true });
    writeFileSync(path.join(root, 'app/(marketing)/page.tsx'), '');
  });

  it('matches a folder named (marketing) literally, not as a regex group', () => {
    const folder = parse('app/(marketing)');
    expect(folder.pattern).toBe('app/(marketing)/**');
    expect(scopesOverlap(folder, parse('app/(marketing)/page.tsx'))).toBe(true);
    expect(scopesOverlap(folder, parse('app/marketing/x.tsx'))).toBe(false);
  });

  it('keeps literal parentheses and bars literal after a wildcard too', () => {
    expect(scopesOverlap(parse('app/*/(group)/page.tsx'), parse('app/x/(group)/page.tsx'))).toBe(true);
    expect(scopesOverlap(parse('src/(a|b)/*.ts'), parse('src/a/x.ts'))).toBe(false);
  });

  it('judges a glob typed inside app/[slug] the same way whichever side of the comparison it is on', () => {
    const inBracketFolder = parse('*.tsx', 'app/[slug]');
    const sibling = parse('app/s/**');
    expect(scopesOverlap(inBracketFolder, sibling)).toBe(scopesOverlap(sibling, inBracketFolder));
    // `[slug]` is a character class to a glob, so the claim over-refuses; it must never under-refuse.
    expect(scopesOverlap(inBracketFolder, sibling)).toBe(true);
  });
});

describe('odd file names', () => {
  it('matches a name containing a newline under ** like any other name', () => {
    const folder = parseScope('src/**', ctx());
    expect(
      scopesOverlap(folder, { kind: 'path', pattern: 'src/a\nb.ts', glob: false, fixed: ['src', 'a\nb.ts'] }),
    ).toBe(true);
  });
});

describe('parseScope: `..` after a symlink', () => {
  it('leaves the link target, as the file system does, not the link', () => {
    // Written through `src/to-docs/../a.ts`, a file lands at `a.ts`, not `src/a.ts`.
    expect(parse('src/to-docs/../a.ts')).toMatchObject({ kind: 'path', pattern: 'a.ts' });
    expect(parse(`${root}/src/to-docs/../a.ts`)).toMatchObject({ pattern: 'a.ts' });
    expect(parse('src/to-docs/../src/*.ts')).toMatchObject({ pattern: 'src/*.ts' });
  });

  it('refuses a path that leaves the tree that way, saying where it leads', () => {
    const error = parseError('src/esc/../x.ts');
    expect(error.code).toBe('E_SCOPE_OUTSIDE_TREE');
    expect(error.message).toBe(
      `src/esc/../x.ts is outside the tree ${root} (a symlink on the way leads to ${path.join(tmp, 'outside/x.ts')})`,
    );
  });

  it('reads `..` from a folder given through a symlink (`--dir src/to-docs`) from its target', () => {
    // src/to-docs is docs, whose parent is the root: as from a shell that did `cd src/to-docs`,
    // whose process then runs in docs itself.
    expect(parse('../src/a.ts', 'src/to-docs')).toMatchObject({ pattern: 'src/a.ts' });
    expect(parse('../x.md', 'src/to-docs')).toMatchObject({ pattern: 'x.md' });
  });
});
