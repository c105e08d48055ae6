/**
 * What a new user tripped over (issue: fail closed, one store per repository, and what a new user
 * met): each case fails without its fix.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveIdentity } from '../../src/core/identity.js';
import { makeSandbox, type Sandbox } from './cli-harness.js';

let box: Sandbox;
beforeEach(() => {
  box = makeSandbox();
});
afterEach(() => box.cleanup());

const chain = [{ pid: 4242, started: 's', name: 'claude', user: 'u' }];

describe('a parent inferred from the calling process, and how to say there is none', () => {
  it('AGENT_PARENT_ID empty or none means no parent, never a parent named "none"', () => {
    for (const value of ['', 'none', 'NONE', '  ']) {
      const id = resolveIdentity({ AGENT_ID: 'other', AGENT_PARENT_ID: value }, chain, 'h');
      expect(id.parentAgentId, JSON.stringify(value)).toBeNull();
      expect(id.parentSource).toBe('AGENT_PARENT_ID');
    }
    const inferred = resolveIdentity({ AGENT_ID: 'other' }, chain, 'h');
    expect(inferred.parentAgentId).toMatch(/^claude-/);
    expect(inferred.parentSource).toBe('without AGENT_ID');
  });

  it('an AGENT_ID with no parent is refused by the lock of the agent that runs it', async () => {
    const shell = { AGENT_ID: undefined, AGENT_PARENT_ID: undefined };
    expect((await box.run('x', ['acquire', 'src/a.ts'], shell)).code).toBe(0);
    const inferred = await box.run('other', ['acquire', 'src/**'], { AGENT_PARENT_ID: undefined });
    // Granted as a sub-agent of the shell's agent, and the answer says it relied on that.
    expect(inferred.code).toBe(0);
    expect(inferred.stdout).toMatch(/^note: acting as a sub-agent of .+ \(inferred, since AGENT_ID is set/m);
    expect((await box.run('other', ['release', 'src/**'])).code).toBe(0);

    const alone = await box.json('other', ['acquire', 'src/**'], { AGENT_PARENT_ID: 'none' });
    expect(alone.body.status).toBe('held');
    expect(alone.body.agent).toEqual({ id: 'other', parent_id: null });
    const json = await box.json('other', ['check', 'src/b.ts']);
    expect(json.body.agent).toMatchObject({ parent_inferred: true });
    const who = await box.run('other', ['whoami'], { AGENT_PARENT_ID: undefined });
    expect(who.stdout).toMatch(/^PARENT .+ \(inferred: .*AGENT_PARENT_ID=none for no parent\)$/m);
  });
});

describe('scopes a store must refuse', () => {
  it('refuses scopes inside .git/ with one line, exit 2', async () => {
    for (const scope of ['.git/config', '.git', 'sub/.git/HEAD', '.git/**']) {
      const r = await box.run('A', ['acquire', scope]);
      expect(r.code, scope).toBe(2);
      expect(r.stderr).toMatch(/^ERROR: alock: scope .+ is inside \.git\/, which belongs to git \(.+\)\n$/);
    }
    expect((await box.run('A', ['acquire', '.github/workflows/ci.yml'])).code).toBe(0);
  });

  it('refuses [!...], which this glob dialect does not read as a negation, and names [^...]', async () => {
    const r = await box.run('A', ['acquire', 'src/[!a].ts']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^ERROR: alock: scope src\/\[!a\]\.ts: \[!\.\.\.\] is not a negated class here \(write \[\^\.\.\.\]/,
    );
    expect((await box.run('A', ['acquire', 'src/[^a].ts'])).code).toBe(0);
    expect((await box.run('B', ['acquire', 'src/b.ts'])).code).toBe(1);
  });

  it('refuses a path scope longer than a file system allows, like a long @resource', async () => {
    for (const scope of [`${'a/'.repeat(2100)}x.ts`, `${'n'.repeat(300)}.ts`]) {
      const r = await box.run('A', ['acquire', scope]);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
      expect(r.stderr).toMatch(
        /^ERROR: alock: scope .+ (is longer than 4096 characters|has a name longer than 255 bytes)/,
      );
    }
    expect((await box.json('A', ['list'])).body.locks).toEqual([]);
  });
});

describe('answers that misled', () => {
  it('a read-only first command leaves a store whose first grant is fence 1', async () => {
    expect((await box.run('A', ['whoami'])).code).toBe(0);
    const first = await box.json('A', ['acquire', '@first']);
    expect(first.body.locks[0]).toMatchObject({ fence: 1 });
  });

  it('list shows an unreadable record by id, and suggests repair or break, never asking <unknown>', async () => {
    expect((await box.run('A', ['acquire', 'src/a.ts'])).code).toBe(0);
    appendFileSync(path.join(box.store, 'locks.log'), 'garbage\n');
    const list = await box.run('B', ['list']);
    const id = /UNREADABLE record, id (\S+)/.exec(list.stdout)?.[1];
    expect(id).toBeDefined();
    const line = list.stdout.split('\n').find((text) => text.includes('UNREADABLE'))!;
    expect(line).not.toMatch(/ago|fence|TTL/);
    const held = await box.run('B', ['acquire', 'docs/x.md']);
    expect(held.code).toBe(1);
    expect(held.stdout).not.toContain('ask <unknown>');
    expect(held.stdout).toContain(`break --id ${id}`);
    expect(held.stdout).toContain('alock repair');
  });

  it('acquire of your own lease with another --ttl sets the lease to it and says so', async () => {
    expect((await box.run('A', ['acquire', '@t', '--ttl', '10'])).code).toBe(0);
    const again = await box.run('A', ['acquire', '@t', '--ttl', '600']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('lease set to 600s from now');
    const lock = (await box.json('A', ['list'])).body.locks[0] as {
      ttl_seconds?: number;
      expires_at: string;
    };
    expect(Date.parse(lock.expires_at) - Date.now()).toBeGreaterThan(500_000);
  });

  it('a --ttl asked for a narrower scope never shortens a wider lock, nor gives one without a TTL a lease', async () => {
    expect((await box.run('A', ['acquire', 'src/**'])).code).toBe(0);
    expect((await box.run('A', ['acquire', 'src/a.ts', '--ttl', '2'])).code).toBe(0);
    const wide = (await box.json('A', ['list'])).body.locks[0] as { expires_at: string | null };
    expect(wide.expires_at).toBeNull();
    expect((await box.run('A', ['acquire', '@lease', '--ttl', '600'])).code).toBe(0);
    expect((await box.run('A', ['acquire', '@lease', '--ttl', '5'])).code).toBe(0);
    const lease = (await box.json('A', ['list'])).body.locks.find((l) => l.scope === '@lease') as {
      expires_at: string;
    };
    // Its own scope: set as asked, also shorter.
    expect(Date.parse(lease.expires_at) - Date.now()).toBeLessThan(6_000);
  });

  it('break --id that finds nothing names the id, not a scope', async () => {
    const r = await box.run('A', ['break', '--id', 'lk_nothere']);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')[0]).toBe('NOT LOCKED --id lk_nothere: no lock with this id');
  });

  it('release of several scopes says what was released and what was not, per scope', async () => {
    expect((await box.run('A', ['acquire', '@d'])).code).toBe(0);
    const r = await box.run('A', ['release', '@d', '@nothere']);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')[0]).toBe('NOT LOCKED @nothere: no lock on exactly this scope');
    expect(r.stdout).toContain('  released: @d');
    const json = await box.json('A', ['release', '@d', '@gone']);
    expect(json.body.not_found).toEqual(['@d', '@gone']);
  });

  it('a file store marker is never written without a readable log', async () => {
    expect((await box.run('A', ['whoami'])).code).toBe(0);
    expect(readFileSync(path.join(box.store, 'locks.log'), 'utf8')).toMatch(/^\{"t":"snap","fence":0,/);
    expect(JSON.parse(readFileSync(path.join(box.store, 'backend.json'), 'utf8'))).toMatchObject({
      log: true,
    });
  });
});
