/**
 * A damaged file store fails closed (docs/stores.md): whatever was done to its log, no decision grants
 * a lock over the damage, the damaged bytes stay exactly as they were, and only `repair` moves them
 * aside (kept) and lets the store go on with what could be read, fences above anything granted.
 */
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Locks, openLocks } from '../../../src/index.js';
import { CLI, scratch } from '../../race/helpers.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Damage {
  readonly name: string;
  /** Damages the log (its text as written before) in place. */
  readonly apply: (log: string, before: Buffer) => void;
  /** Some of the log stays readable: repair keeps the locks of the whole lines before the damage. */
  readonly keepsLocks: boolean;
}

const line = (before: Buffer, n: number) => before.toString('utf8').split('\n')[n]!;

/** The log's locks as one snapshot line (as a compaction writes it): its locks then live there. */
function asSnapshot(before: Buffer): string {
  const locks = new Map<string, unknown>();
  let fence = 0;
  for (const text of before
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .split('\n')) {
    if (text === '') continue;
    const entry = JSON.parse(text) as {
      fence: number;
      locks?: { id: string }[];
      put?: { id: string }[];
      del?: string[];
    };
    for (const id of entry.del ?? []) locks.delete(id);
    for (const record of [...(entry.locks ?? []), ...(entry.put ?? [])]) locks.set(record.id, record);
    fence = Math.max(fence, entry.fence);
  }
  return `${JSON.stringify({ t: 'snap', fence, locks: [...locks.values()], tomb: [] })}\n`;
}

/** A commit putting a copy of the log's first lock with its scope changed: well formed otherwise. */
function commitWithScope(before: Buffer, scope: string): string {
  const first = (JSON.parse(line(before, 1)) as { fence: number; put: Record<string, unknown>[] }).put[0]!;
  const record = { ...first, id: `${first.id}-copy`, scope, kind: 'path', fence: 99 };
  return `${JSON.stringify({ t: 'tx', fence: 99, put: [record], del: [] })}\n`;
}
const cutAt = (log: string, before: Buffer, at: number) => writeFileSync(log, before.subarray(0, at));

const DAMAGE: readonly Damage[] = [
  {
    name: 'overwritten with foreign text',
    apply: (log) => writeFileSync(log, 'hello\nworld\n'),
    keepsLocks: false,
  },
  {
    name: 'overwritten with binary bytes',
    apply: (log) => writeFileSync(log, Buffer.from([0, 255, 1, 254, 2, 253])),
    keepsLocks: false,
  },
  { name: 'emptied', apply: (log) => writeFileSync(log, ''), keepsLocks: false },
  { name: 'removed', apply: (log) => rmSync(log), keepsLocks: false },
  { name: 'cut inside its snapshot', apply: (log, before) => cutAt(log, before, 10), keepsLocks: false },
  {
    name: 'cut inside its last commit',
    apply: (log, before) => cutAt(log, before, before.length - 20),
    keepsLocks: true,
  },
  {
    name: 'cut inside a middle commit',
    apply: (log, before) => {
      const lines = before.toString('utf8').split('\n');
      const keep = `${lines.slice(0, 2).join('\n')}\n${lines[2]!.slice(0, 30)}`;
      writeFileSync(log, keep);
    },
    keepsLocks: true,
  },
  {
    name: 'first line replaced',
    apply: (log, before) => {
      const lines = before.toString('utf8').split('\n');
      lines[0] = 'not a snapshot';
      writeFileSync(log, lines.join('\n'));
    },
    keepsLocks: false,
  },
  {
    name: 'foreign bytes appended',
    apply: (log) => appendFileSync(log, 'tail without newline'),
    keepsLocks: true,
  },
  {
    name: 'a snapshot line appended (it would wipe every lock before it)',
    apply: (log) => appendFileSync(log, '{"t":"snap","fence":0,"locks":[],"tomb":[]}\n'),
    keepsLocks: true,
  },
  {
    name: 'a commit of the wrong shape appended',
    apply: (log) => appendFileSync(log, '{"t":"tx","fence":3,"put":"garbage"}\n{"fence":3}\n'),
    keepsLocks: true,
  },
  {
    name: 'foreign bytes before a snapshot that holds the locks',
    apply: (log, before) => writeFileSync(log, `#!garbage\u0000${asSnapshot(before)}`),
    keepsLocks: true,
  },
  {
    name: 'a well-formed record whose scope is empty appended',
    apply: (log, before) => appendFileSync(log, commitWithScope(before, '')),
    keepsLocks: true,
  },
  {
    name: 'a well-formed record whose scope leaves the tree (../etc/**) appended',
    apply: (log, before) => appendFileSync(log, commitWithScope(before, '../etc/**')),
    keepsLocks: true,
  },
  {
    name: 'a well-formed record with an absolute scope (/etc/passwd) appended',
    apply: (log, before) => appendFileSync(log, commitWithScope(before, '/etc/passwd')),
    keepsLocks: true,
  },
  {
    name: 'a middle line overwritten',
    apply: (log, before) => {
      const lines = before.toString('utf8').split('\n');
      lines[2] = 'x'.repeat(line(before, 2).length);
      writeFileSync(log, lines.join('\n'));
    },
    keepsLocks: true,
  },
];

let tried = 0;
afterAll(() => {
  // The count the issue asks for: how many damage patterns the fault tests tried.
  console.log(`store-damage: ${tried} damage patterns tried on the file store`);
});

async function setup(name: string) {
  const dirs = scratch(`damage-${name.replace(/\W+/g, '-')}`);
  mkdirSync(dirs.tree, { recursive: true });
  cleanups.push(dirs.cleanup);
  const open = async (agent: string): Promise<Locks> => {
    const locks = await openLocks({ dir: dirs.tree, storeDir: dirs.store, env: { AGENT_ID: agent } });
    cleanups.push(() => locks.close());
    return locks;
  };
  return { ...dirs, open, log: path.join(dirs.store, 'locks.log') };
}

/** Every way a decision may answer over damage without granting: refused, or held by <unknown>. */
async function grantsNothing(locks: Locks, scopes: string[]): Promise<string> {
  try {
    const outcome = await locks.acquire(scopes);
    expect(outcome.status, scopes.join(' ')).toBe('held');
    return 'held';
  } catch (error) {
    expect(error).toMatchObject({ code: 'E_STORE_UNREADABLE' });
    return 'refused';
  }
}

describe('file store: a damaged log fails closed', () => {
  for (const damage of DAMAGE) {
    it(`${damage.name}: grants nothing, keeps the bytes, and repair moves them aside`, async () => {
      tried += 1;
      const s = await setup(damage.name);
      const a = await s.open('a');
      const taken = await a.acquire(['src/a.ts', '@keep'], { intent: 'before the damage' });
      expect(taken.status).toBe('acquired');
      expect((await a.acquire(['@second'])).status).toBe('acquired');
      const maxFence = Math.max(...(await a.list()).locks.map((lock) => lock.fence));
      const before = readFileSync(s.log);
      damage.apply(s.log, before);
      const damaged = existsSync(s.log) ? readFileSync(s.log) : null;

      // Neither a new process nor the warm handle that wrote the log grants anything over it.
      const b = await s.open('b');
      for (const locks of [b, a]) {
        await grantsNothing(locks, ['src/**']);
        await grantsNothing(locks, ['@keep']);
        await grantsNothing(locks, ['@new']);
      }
      expect(existsSync(s.log) ? readFileSync(s.log) : null).toEqual(damaged);

      const report = await b.repair();
      expect(report.damage.length).toBeGreaterThan(0);
      if (damaged !== null && damaged.length > 0) {
        expect(report.keptAt).toHaveLength(1);
        expect(readFileSync(report.keptAt[0]!)).toEqual(damaged);
      }
      expect((await b.repair()).damage).toEqual([]);

      const after = await b.list();
      if (damage.keepsLocks) {
        expect(after.locks.map((lock) => lock.scope).sort()).toEqual(
          expect.arrayContaining(['@keep', 'src/a.ts']),
        );
        expect((await b.acquire(['src/**'])).status).toBe('held');
      }
      const fresh = await b.acquire(['@after-repair']);
      expect(fresh.status).toBe('acquired');
      expect(fresh.locks[0]!.fence).toBeGreaterThan(maxFence);
    });
  }

  // A UTF-8 byte-order mark (an editor saving the log) is no damage: the line after it is whole.
  for (const [name, rewrite] of [
    ['before the log', (before: Buffer) => before],
    ['before a snapshot that holds every lock', (before: Buffer) => Buffer.from(asSnapshot(before))],
  ] as const) {
    it(`a byte-order mark ${name}: read through, every lock kept, repair finds nothing`, async () => {
      tried += 1;
      const s = await setup(`bom ${name}`);
      const a = await s.open('a');
      expect((await a.acquire(['src/a.ts', '@keep'])).status).toBe('acquired');
      expect((await a.acquire(['@second'])).status).toBe('acquired');
      await a.close();
      writeFileSync(s.log, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), rewrite(readFileSync(s.log))]));
      const b = await s.open('b');
      expect((await b.list()).locks.map((lock) => lock.scope).sort()).toEqual([
        '@keep',
        '@second',
        'src/a.ts',
      ]);
      expect((await b.acquire(['src/**'])).status).toBe('held');
      expect((await b.acquire(['docs/**'])).status).toBe('acquired');
      const again = await s.open('a');
      expect((await again.release(['@second'])).status).toBe('released');
      expect(await b.repair()).toMatchObject({ damage: [], locksKept: 3 });
      expect((await b.list()).locks).toHaveLength(3);
    });
  }

  it('a byte-order mark before a compacted log, through the command line: commands answer, repair keeps every lock', () => {
    tried += 1;
    const dirs = scratch('damage-bom-cli');
    mkdirSync(dirs.tree, { recursive: true });
    cleanups.push(dirs.cleanup);
    const alock = (agent: string, ...argv: string[]) =>
      spawnSync(process.execPath, [CLI, ...argv], {
        cwd: dirs.tree,
        encoding: 'utf8',
        env: {
          ...process.env,
          AGENT_LOCK_DIR: dirs.store,
          AGENT_LOCK_REDIS_PROBE: 'off',
          AGENT_ID: agent,
          AGENT_PARENT_ID: 'none',
        },
      });
    for (const agent of ['p1', 'p2', 'p3'])
      expect(alock(agent, 'acquire', `${agent}.ts`, '--ttl', '3600').status).toBe(0);
    const log = path.join(dirs.store, 'locks.log');
    writeFileSync(
      log,
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(asSnapshot(readFileSync(log)))]),
    );
    const list = alock('p1', 'list', '--json');
    expect(list.stderr).toBe('');
    expect(list.status).toBe(0);
    expect((JSON.parse(list.stdout) as { locks: unknown[] }).locks).toHaveLength(3);
    expect(alock('p4', 'acquire', 'p1.ts').status).toBe(1);
    expect(alock('p4', 'acquire', 'p4.ts').status).toBe(0);
    // Foreign bytes instead: damage, and repair still keeps every lock the snapshot holds.
    writeFileSync(log, Buffer.concat([Buffer.from('junk '), Buffer.from(asSnapshot(readFileSync(log)))]));
    expect(alock('p4', 'list').status).toBe(2);
    const repair = alock('p1', 'repair');
    expect(repair.stdout).toContain('4 readable locks kept');
    expect(alock('p1', 'list').stdout.match(/ by p\d/g)).toHaveLength(4);
  });

  it('keeps a log with an unreadable line aside before a compaction would drop it', async () => {
    const s = await setup('compaction');
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    appendFileSync(s.log, 'garbage line\n');
    const withGarbage = readFileSync(s.log);
    // Notes still commit (on the holder's own lock) until the log is compacted.
    for (let i = 0; i < 600; i++) expect((await a.note('src/a.ts', `step ${i}`)).status).toBe('noted');
    // Compacted: the live log no longer has the line, the copy kept aside has it as it was.
    expect(readFileSync(s.log, 'utf8')).not.toContain('garbage line');
    const aside = path.join(s.store, 'damaged');
    const kept = readFileSync(path.join(aside, readdirSync(aside)[0]!));
    expect(kept.subarray(0, withGarbage.length)).toEqual(withGarbage);
    // The unreadable record still blocks after the compaction.
    const b = await s.open('b');
    expect((await b.acquire(['docs/x.md'])).conflicts.map((lock) => lock.agent_id)).toContain('<unknown>');
  });
  it('a store marked by an older version (no log flag) gets it once its log reads whole', async () => {
    const s = await setup('old-marker');
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    await a.close();
    const marker = path.join(s.store, 'backend.json');
    writeFileSync(
      marker,
      `${JSON.stringify({ schema: 'agent-lock/store-v1', backend: 'file', created_at: 'x' })}\n`,
    );
    await s.open('b');
    expect(JSON.parse(readFileSync(marker, 'utf8'))).toMatchObject({ log: true });
    rmSync(s.log);
    const c = await s.open('c');
    await expect(c.acquire(['lib/b.ts'])).rejects.toMatchObject({ code: 'E_STORE_UNREADABLE' });
    expect((await c.repair()).damage).toEqual([expect.stringContaining('is missing')]);
  });
});
