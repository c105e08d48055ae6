import { appendFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeSandbox, parseOneJson, type Sandbox, STACK_FRAME } from './cli-harness.js';

let box: Sandbox;
beforeEach(async () => {
  box = makeSandbox();
  await seed();
});
afterEach(() => {
  box.cleanup();
});

/** Locks that every bad input must leave exactly as they were. */
async function seed(): Promise<void> {
  const runs = [
    await box.run('A', ['acquire', 'src/a.ts', '-m', 'seeded work']),
    await box.run('A', ['note', 'src/a.ts', 'first step done']),
    await box.run('A', ['acquire', '@merge', '--ttl', '600']),
    await box.run('B', ['acquire', 'docs/**', '--shared']),
  ];
  for (const r of runs) expect(r.code).toBe(0);
}

async function snapshot(): Promise<Record<string, unknown>[]> {
  const r = await box.json('observer', ['list']);
  expect(r.code).toBe(0);
  expect(r.body.locks).toHaveLength(3);
  return r.body.locks;
}

interface BadCase {
  name: string;
  argv: string[];
  env?: Record<string, string | undefined>;
  /** Acceptable error codes. */
  codes: string[];
  /** Words the one-line message must contain. */
  says?: RegExp;
  /** Prepares the tree or the store; returns an undo run before the "after" snapshot. */
  setup?: (box: Sandbox) => (() => void) | undefined;
}

// Every scope here is otherwise free, so a command that wrongly went ahead would change the store.
const FREE = 'lib/new.ts';

const cases: BadCase[] = [
  { name: "blank scope ''", argv: ['acquire', ''], codes: ['E_SCOPE_EMPTY'], says: /empty scope.*\*\*/ },
  { name: "blank scope '   '", argv: ['acquire', '   '], codes: ['E_SCOPE_EMPTY'] },
  { name: 'blank scope among good ones', argv: ['acquire', FREE, ''], codes: ['E_SCOPE_EMPTY'] },
  {
    name: "'..' (the tree's parent)",
    argv: ['acquire', '..'],
    codes: ['E_SCOPE_OUTSIDE_TREE'],
    says: /outside/,
  },
  { name: '../x', argv: ['acquire', '../x.ts'], codes: ['E_SCOPE_OUTSIDE_TREE'] },
  { name: 'src/../../x', argv: ['acquire', 'src/../../x.ts'], codes: ['E_SCOPE_OUTSIDE_TREE'] },
  {
    name: 'the sibling-prefix trap ../repo-other/x',
    argv: ['acquire', '../repo-other/x.ts'],
    codes: ['E_SCOPE_OUTSIDE_TREE'],
  },
  { name: 'an absolute path outside', argv: ['acquire', '/etc/passwd'], codes: ['E_SCOPE_OUTSIDE_TREE'] },
  { name: 'an outside glob', argv: ['acquire', '../**'], codes: ['E_SCOPE_OUTSIDE_TREE'] },
  {
    name: 'a symlink in the tree pointing outside',
    argv: ['acquire', 'escape/x.ts'],
    codes: ['E_SCOPE_OUTSIDE_TREE'],
    setup: (b) => {
      symlinkSync(b.outside, path.join(b.tree, 'escape'));
      return undefined;
    },
  },
  {
    name: 'the outside symlink itself',
    argv: ['acquire', 'escape'],
    codes: ['E_SCOPE_OUTSIDE_TREE'],
    setup: (b) => {
      symlinkSync(b.outside, path.join(b.tree, 'escape'));
      return undefined;
    },
  },
  {
    name: 'a glob under an outside symlink',
    argv: ['acquire', 'escape/**'],
    codes: ['E_SCOPE_OUTSIDE_TREE'],
    setup: (b) => {
      symlinkSync(b.outside, path.join(b.tree, 'escape'));
      return undefined;
    },
  },
  {
    name: 'a dangling symlink pointing outside',
    argv: ['acquire', 'dangle'],
    codes: ['E_SCOPE_OUTSIDE_TREE'],
    setup: (b) => {
      symlinkSync(path.join(b.outside, 'not-yet'), path.join(b.tree, 'dangle'));
      return undefined;
    },
  },
  { name: 'src/**/../x', argv: ['acquire', 'src/**/../x'], codes: ['E_SCOPE_INVALID'], says: /\.\./ },
  { name: 'a control character in a scope', argv: ['acquire', 'src/a\u0007.ts'], codes: ['E_SCOPE_INVALID'] },
  { name: "resource '@'", argv: ['acquire', '@'], codes: ['E_RESOURCE_INVALID'] },
  { name: "resource '@a b'", argv: ['acquire', '@a b'], codes: ['E_RESOURCE_INVALID'] },
  {
    name: 'a resource of 201 characters',
    argv: ['acquire', `@${'r'.repeat(201)}`],
    codes: ['E_RESOURCE_INVALID'],
    says: /200/,
  },
  { name: '--ttl 0', argv: ['acquire', FREE, '--ttl', '0'], codes: ['E_TTL_INVALID'], says: /--ttl/ },
  { name: '--ttl -5', argv: ['acquire', FREE, '--ttl', '-5'], codes: ['E_TTL_INVALID', 'E_USAGE'] },
  { name: '--ttl=-5', argv: ['acquire', FREE, '--ttl=-5'], codes: ['E_TTL_INVALID'] },
  { name: '--ttl abc', argv: ['acquire', FREE, '--ttl', 'abc'], codes: ['E_TTL_INVALID'] },
  { name: '--ttl 1.5', argv: ['acquire', FREE, '--ttl', '1.5'], codes: ['E_TTL_INVALID'] },
  { name: '--ttl 99999999999', argv: ['acquire', FREE, '--ttl', '99999999999'], codes: ['E_TTL_INVALID'] },
  { name: 'renew --ttl abc', argv: ['renew', '@merge', '--ttl', 'abc'], env: {}, codes: ['E_TTL_INVALID'] },
  {
    name: 'an unknown flag',
    argv: ['acquire', FREE, '--frobnicate'],
    codes: ['E_USAGE'],
    says: /frobnicate/,
  },
  { name: 'an unknown global flag', argv: ['--frobnicate', 'list'], codes: ['E_USAGE'] },
  { name: 'an unknown command', argv: ['frobnicate', FREE], codes: ['E_USAGE'], says: /frobnicate/ },
  { name: 'acquire without a scope', argv: ['acquire'], codes: ['E_USAGE'] },
  { name: 'check without a scope', argv: ['check'], codes: ['E_USAGE'] },
  { name: 'release without a scope', argv: ['release'], codes: ['E_USAGE'] },
  { name: 'release with a scope and --all', argv: ['release', 'src/a.ts', '--all'], codes: ['E_USAGE'] },
  { name: 'renew without a scope', argv: ['renew'], codes: ['E_USAGE'] },
  { name: 'note without text', argv: ['note', 'src/a.ts'], codes: ['E_USAGE'] },
  { name: 'note with blank text', argv: ['note', 'src/a.ts', '   '], codes: ['E_USAGE'] },
  { name: 'resume without a scope', argv: ['resume'], codes: ['E_USAGE'] },
  { name: 'break without a scope or --id', argv: ['break'], codes: ['E_USAGE'] },
  { name: 'an extra argument to list', argv: ['list', 'extra'], codes: ['E_USAGE'] },
  { name: 'completion for an unknown shell', argv: ['completion', 'powershell'], codes: ['E_USAGE'] },
  {
    name: 'AGENT_LOCK_STALE_MINUTES=abc',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_STALE_MINUTES: 'abc' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_STALE_MINUTES/,
  },
  {
    name: 'AGENT_LOCK_STALE_MINUTES=0',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_STALE_MINUTES: '0' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_STALE_MINUTES/,
  },
  {
    name: 'AGENT_LOCK_STALE_MINUTES past its bound',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_STALE_MINUTES: '99999999999' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_STALE_MINUTES must be a positive number, at most \d+ \(got "99999999999"\)/,
  },
  {
    name: 'AGENT_LOCK_TTL_SECONDS=-1',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_TTL_SECONDS: '-1' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_TTL_SECONDS/,
  },
  {
    name: 'AGENT_LOCK_TTL_SECONDS=abc',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_TTL_SECONDS: 'abc' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_TTL_SECONDS/,
  },
  {
    name: 'AGENT_LOCK_MUTEX_TIMEOUT=0',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_MUTEX_TIMEOUT: '0' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_MUTEX_TIMEOUT/,
  },
  {
    name: 'AGENT_LOCK_BACKEND=postgres',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_BACKEND: 'postgres' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_BACKEND/,
  },
  {
    name: 'AGENT_ID with a space',
    argv: ['acquire', FREE],
    env: { AGENT_ID: 'agent one' },
    codes: ['E_ENV_INVALID', 'E_IDENTITY_INVALID'],
    says: /AGENT_ID/,
  },
  {
    name: 'AGENT_PARENT_ID with a space',
    argv: ['acquire', FREE],
    env: { AGENT_PARENT_ID: 'the boss' },
    codes: ['E_ENV_INVALID', 'E_IDENTITY_INVALID'],
    says: /AGENT_PARENT_ID/,
  },
  {
    name: 'AGENT_LOCK_TREE with a space',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_TREE: 'my tree' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_TREE/,
  },
  {
    name: 'AGENT_LOCK_REDIS_URL=http://x',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_REDIS_URL: 'http://x' },
    codes: ['E_ENV_INVALID'],
    says: /AGENT_LOCK_REDIS_URL/,
  },
  {
    name: 'REDIS_URL=http://x',
    argv: ['acquire', FREE],
    env: { REDIS_URL: 'http://x' },
    codes: ['E_ENV_INVALID'],
    says: /REDIS_URL/,
  },
  {
    name: '--backend bogus',
    argv: ['--backend', 'bogus', 'acquire', FREE],
    codes: ['E_USAGE'],
    says: /bogus/,
  },
  {
    name: '--backend redis (not in this build)',
    argv: ['--backend', 'redis', 'acquire', FREE],
    codes: ['E_BACKEND_MISMATCH', 'E_BACKEND_UNAVAILABLE'],
    says: /redis/,
  },
  {
    name: 'AGENT_LOCK_BACKEND=redis (not in this build)',
    argv: ['acquire', FREE],
    env: { AGENT_LOCK_BACKEND: 'redis' },
    codes: ['E_BACKEND_MISMATCH', 'E_BACKEND_UNAVAILABLE'],
    says: /redis/,
  },
  {
    name: 'a corrupt store marker',
    argv: ['acquire', FREE],
    codes: ['E_STORE_UNREADABLE'],
    says: /backend\.json/,
    setup: (b) => {
      const marker = path.join(b.store, 'backend.json');
      const original = readFileSync(marker);
      writeFileSync(marker, '{not json at all');
      return () => writeFileSync(marker, original);
    },
  },
  {
    name: 'a store marker naming an unknown backend',
    argv: ['list'],
    codes: ['E_STORE_UNREADABLE'],
    setup: (b) => {
      const marker = path.join(b.store, 'backend.json');
      const original = readFileSync(marker);
      writeFileSync(marker, JSON.stringify({ schema: 'agent-lock/store-v1', backend: 'postgres' }));
      return () => writeFileSync(marker, original);
    },
  },
  ...[
    { url: 'redis://127.0.0.1:6379/0/x', prefix: 'agent-lock' },
    { url: 'redis://127.0.0.1:6379/0', prefix: 'bad prefix' },
  ].map((redis) => ({
    name: `a store marker with a Redis ${redis.prefix === 'agent-lock' ? 'URL' : 'prefix'} that cannot be used`,
    argv: ['list'],
    codes: ['E_STORE_UNREADABLE'],
    says: /backend\.json/,
    setup: (b: Sandbox) => {
      const marker = path.join(b.store, 'backend.json');
      const original = readFileSync(marker);
      writeFileSync(marker, JSON.stringify({ schema: 'agent-lock/store-v1', backend: 'redis', redis }));
      return () => writeFileSync(marker, original);
    },
  })),
];

describe('bad input: exit 2, one ERROR line, no stack, every lock unchanged', () => {
  it.each(cases)('$name', async (c) => {
    const before = await snapshot();
    const undo = c.setup?.(box);

    const text = await box.run('A', c.argv, c.env ?? {});
    expect(text.code).toBe(2);
    expect(text.stdout).toBe('');
    const lines = text.stderr.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    expect(text.stderr.endsWith('\n')).toBe(true);
    expect(lines[0]!.startsWith('ERROR: alock: ')).toBe(true);
    // docs/cli.md, exit codes: `ERROR: alock: <what> (<what to do>)`.
    expect(lines[0]).toMatch(/^ERROR: alock: .+ \(.+\)$/);
    expect(STACK_FRAME.test(text.stderr)).toBe(false);
    expect(lines[0]).not.toMatch(/AgentLockError|CommanderError|internal error/);
    if (c.says) expect(lines[0]).toMatch(c.says);

    const json = await box.run('A', ['--json', ...c.argv], c.env ?? {});
    expect(json.code).toBe(2);
    expect(STACK_FRAME.test(json.stdout + json.stderr)).toBe(false);
    const body = parseOneJson(json.stdout);
    expect(body).toMatchObject({
      schema: 'agent-lock/v1',
      status: 'error',
      ok: false,
      exit_code: 2,
      locks: [],
      conflicts: [],
    });
    expect(c.codes).toContain(body.error?.code);
    expect(typeof body.error?.message).toBe('string');
    expect(body.error?.message.length).toBeGreaterThan(0);

    undo?.();
    expect(await snapshot()).toEqual(before);
  });
});

describe('a --dir that does not exist', () => {
  it('is exit 2 with one ERROR line, and the lock set is unchanged', async () => {
    const before = await snapshot();
    const r = await box.run('A', ['--dir', path.join(box.tree, 'no-such-folder'), 'acquire', 'x.ts']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^ERROR: alock: .*no-such-folder/);
    expect(await snapshot()).toEqual(before);
  });

  it('is reported as a usage error about --dir, not as an unreadable store', async () => {
    const r = await box.json('A', ['--dir', path.join(box.tree, 'no-such-folder'), 'acquire', 'x.ts']);
    expect(r.code).toBe(2);
    expect(r.body.error?.code).toBe('E_USAGE');
    expect(r.body.error?.message).toMatch(/--dir/);
  });
});

describe('a corrupt record fails closed', () => {
  it('a garbage line in locks.log counts as held by <unknown> until break --id removes it', async () => {
    const before = await snapshot();
    appendFileSync(path.join(box.store, 'locks.log'), 'this is not a record\n');

    for (const scope of ['@fresh', FREE]) {
      const held = await box.run('C', ['acquire', scope]);
      expect(held.code).toBe(1);
      expect(held.stdout.split('\n')[0]).toBe(`HELD ${scope}`);
      expect(held.stdout).toContain('<unknown>');
    }
    const heldJson = await box.json('C', ['acquire', '@fresh']);
    expect(heldJson.body.status).toBe('held');
    expect(heldJson.body.conflicts.map((l) => l.agent_id)).toContain('<unknown>');

    const listed = await box.json('C', ['list']);
    expect(listed.code).toBe(0);
    const unknown = listed.body.locks.filter((l) => l.agent_id === '<unknown>');
    expect(unknown).toHaveLength(1);
    const others = listed.body.locks.filter((l) => l.agent_id !== '<unknown>');
    expect(others).toEqual(before);
    const listText = await box.run('C', ['list']);
    expect(listText.stdout).toContain('<unknown>');

    // No owner can release it; only break may.
    const id = String(unknown[0]!.id);
    const broken = await box.run('C', ['break', '--id', id, '--reason', 'garbage line']);
    expect(broken.code).toBe(0);
    expect(broken.stdout.split('\n')[0]).toMatch(/^BROKEN /);

    expect(await snapshot()).toEqual(before);
    const free = await box.run('C', ['acquire', '@fresh']);
    expect(free.code).toBe(0);
    expect(free.stdout.split('\n')[0]).toBe('ACQUIRED @fresh');
  });

  it('a record of the wrong shape is held by <unknown> under its id, and break --id removes it', async () => {
    const before = await snapshot();
    const fence = Math.max(...before.map((l) => Number(l.fence)));
    const bad = { t: 'tx', fence, put: [{ id: 'lk_badshape', scope: 42 }], del: [], tomb: null };
    appendFileSync(path.join(box.store, 'locks.log'), `${JSON.stringify(bad)}\n`);

    const held = await box.json('C', ['check', '@anything']);
    expect(held.code).toBe(1);
    expect(held.body.conflicts).toEqual([
      expect.objectContaining({ id: 'lk_badshape', agent_id: '<unknown>' }),
    ]);
    const release = await box.run('A', ['release', '--all']);
    expect(release.code).toBe(0);
    const stillThere = await box.json('C', ['list']);
    expect(stillThere.body.locks.map((l) => l.id)).toContain('lk_badshape');
    expect(stillThere.body.locks.map((l) => l.agent_id).sort()).toEqual(['<unknown>', 'B']);

    const broken = await box.json('C', ['break', '--id', 'lk_badshape']);
    expect(broken.code).toBe(0);
    expect(broken.body.status).toBe('broken');
    expect((await box.json('C', ['list'])).body.locks.filter((l) => l.id === 'lk_badshape')).toEqual([]);
  });

  it('a partial last line that no crashed writer left refuses every decision until repair', async () => {
    const before = await snapshot();
    const log = path.join(box.store, 'locks.log');
    appendFileSync(log, '{"t":"tx","fence":99,"put":[{"id":"lk_to');
    const damagedBytes = readFileSync(log);
    const refused = await box.json('C', ['acquire', '@fresh']);
    expect(refused.code).toBe(2);
    expect(refused.body.error?.code).toBe('E_STORE_UNREADABLE');
    expect(refused.body.error?.message).toContain(log);
    expect(readFileSync(log)).toEqual(damagedBytes);

    const repaired = await box.json('C', ['repair']);
    expect(repaired.code).toBe(0);
    expect(repaired.body.status).toBe('repaired');
    expect(await snapshot()).toEqual(before);
    const kept = (repaired.body.repair as { keptAt: string[] }).keptAt[0]!;
    expect(readFileSync(kept)).toEqual(damagedBytes);
    expect((await box.run('C', ['acquire', '@fresh'])).code).toBe(0);
  });
});

describe('scopes that look odd but are inside the tree are accepted', () => {
  it('a symlink pointing inside the tree, a dot folder and a path that does not exist yet', async () => {
    mkdirSync(path.join(box.tree, 'real'));
    symlinkSync(path.join(box.tree, 'real'), path.join(box.tree, 'alias'));
    const r = await box.json('C', ['acquire', 'alias/x.ts', '.plans/**', 'not/yet/here.ts']);
    expect(r.code).toBe(0);
    expect(r.body.locks.map((l) => l.scope)).toEqual(['real/x.ts', '.plans/**', 'not/yet/here.ts']);
  });
});
