/**
 * A refusal over many locks, from the built CLI: the text shows the first conflicts and a count
 * (before, `acquire 'f/**'` over 10,000 locks printed 8,002 lines), the JSON carries every one.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLocks } from '../../src/locks.js';
import { CLI, requireBuild } from '../race/helpers.js';
import { makeSandbox, parseOneJson, type Sandbox } from './cli-harness.js';

let box: Sandbox;
beforeEach(async () => {
  requireBuild();
  box = makeSandbox();
  // 400 locks of 40 agents (10 each), taken by the library in one decision per agent.
  for (let agent = 0; agent < 40; agent++) {
    const locks = await openLocks({
      dir: box.tree,
      env: box.envFor(`bulk-${agent}`, { AGENT_PARENT_ID: 'none' }),
    });
    try {
      const scopes = Array.from({ length: 10 }, (_, i) => `f/${agent}/${i}.ts`);
      expect((await locks.acquire(scopes, { ttl: 600 })).status).toBe('acquired');
    } finally {
      await locks.close();
    }
  }
});
afterEach(() => box.cleanup());

const alock = (argv: string[]) =>
  spawnSync(process.execPath, [CLI, ...argv], {
    cwd: box.tree,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...box.envFor('A', { AGENT_PARENT_ID: 'none' }),
    },
    encoding: 'utf8',
  });

describe('a refusal over 400 locks', () => {
  it('shows the first ten conflicts and counts the rest; --json carries all of them', () => {
    const text = alock(['acquire', 'f/**']);
    expect(text.status).toBe(1);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe("HELD 'f/**'");
    expect(lines.length).toBeLessThanOrEqual(30);
    expect(text.stdout).toContain('  ... and 390 more locks (--json lists them all)');
    // The next line names a few holders, then how many more.
    expect(lines.at(-1)).toMatch(
      /^next: work elsewhere, check again later \(.*\), or ask bulk-\d+, bulk-\d+, bulk-\d+, bulk-\d+, bulk-\d+, 35 more agents with: alock ask /,
    );
    process.stdout.write(
      `refused acquire over 400 locks: ${lines.length} lines, ${text.stdout.length} bytes of text\n`,
    );

    const json = alock(['--json', 'acquire', 'f/**']);
    expect(json.status).toBe(1);
    expect(parseOneJson(json.stdout).conflicts).toHaveLength(400);

    const timed = alock(['acquire', 'f/**', '--wait=0.1']);
    expect(timed.status).toBe(1);
    expect(timed.stdout).toContain('  ... and 390 more locks (--json lists them all)');
    expect(timed.stdout.split('\n').length).toBeLessThanOrEqual(30);
  });
});
