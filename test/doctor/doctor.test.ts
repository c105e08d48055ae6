/**
 * `alock doctor` on the file store, in real git repositories: each check finds the trouble it is
 * for, says how to fix it, and changes nothing it looks at.
 */
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ServerFacts, serverFindings } from '../../src/doctor/backend-checks.js';
import { byCode, makeRepo, problems, type Repo } from './doctor-harness.js';

let repo: Repo | null = null;
const fresh = (files?: string[]) => {
  repo = makeRepo(files);
  return repo;
};
afterEach(() => {
  repo?.cleanup();
  repo = null;
});

describe('alock doctor on the file store', () => {
  it('answers HEALTHY with exit 0 for a store in good order, naming it', async () => {
    const r = fresh();
    expect((await r.run(['acquire', 'src/**'])).code).toBe(0);
    const text = await r.run(['doctor']);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe('');
    expect(text.stdout.split('\n')[0]).toMatch(
      /^HEALTHY 0 problems, \d+ notes? \(file store .*\.git\/agent-locks\)$/,
    );
    const doc = await r.doctor();
    expect(doc.body).toMatchObject({ command: 'doctor', status: 'healthy', ok: true, exit_code: 0 });
    expect(problems(doc.checks)).toEqual([]);
    expect(byCode(doc.checks, 'store_marker')?.message).toMatch(/file backend/);
    expect(byCode(doc.checks, 'store_locks')?.message).toBe('1 lock readable');
    expect(byCode(doc.checks, 'file')?.level).toBe('ok');
  });

  it('creates no store where there is none', async () => {
    const r = fresh();
    const doc = await r.doctor();
    expect(doc.code).toBe(0);
    expect(byCode(doc.checks, 'store_missing')?.level).toBe('note');
    expect(existsSync(r.store)).toBe(false);
  });

  it('reports an unreadable marker with its fix (exit 1) and leaves its bytes as they were', async () => {
    const r = fresh();
    await r.run(['acquire', '@deploy']);
    const marker = path.join(r.store, 'backend.json');
    writeFileSync(marker, '\u0000not json{{');
    const doc = await r.doctor();
    expect(doc.code).toBe(1);
    expect(doc.body.status).toBe('findings');
    const found = byCode(doc.checks, 'store_marker_unreadable');
    expect(found).toMatchObject({ area: 'store', level: 'problem' });
    expect(found?.message).toContain(marker);
    expect(found?.fix).toMatch(/restore it/);
    expect(readFileSync(marker, 'utf8')).toBe('\u0000not json{{');
    const text = await r.run(['doctor']);
    expect(text.stdout).toMatch(/^FINDINGS 1 problem/);
    expect(text.stdout).toMatch(/\n {2}PROBLEM +store +the marker .* cannot be read\n +fix: restore it/);
  });

  it('reports an unreadable record in the log with the break command that removes it', async () => {
    const r = fresh();
    await r.run(['acquire', '@deploy']);
    const log = path.join(r.store, 'locks.log');
    appendFileSync(log, 'garbage that is no record\n');
    const doc = await r.doctor();
    expect(doc.code).toBe(1);
    const found = byCode(doc.checks, 'store_unreadable_records');
    expect(found?.message).toMatch(/^1 unreadable record blocks every scope \(ids \S+\)$/);
    expect(found?.fix).toMatch(/^alock break --id ID/);
    expect(readFileSync(log, 'utf8')).toContain('garbage that is no record\n');
  });

  it('reports a log overwritten whole with the repair that moves it aside, and keeps its bytes', async () => {
    const r = fresh();
    await r.run(['acquire', '@deploy']);
    const log = path.join(r.store, 'locks.log');
    const foreign = Buffer.from([0, 1, 0x66, 0x6f, 0x72, 0x65, 0x69, 0x67, 0x6e, 10]);
    writeFileSync(log, foreign);
    const doc = await r.doctor();
    expect(doc.code).toBe(1);
    const found = byCode(doc.checks, 'store_unreadable');
    expect(found).toMatchObject({ area: 'store', level: 'problem' });
    expect(found?.message).toContain(log);
    expect(found?.fix).toMatch(/alock repair/);
    expect(readFileSync(log)).toEqual(foreign);
  });

  it('finds a tracked file left read-only with no lock, and not the files a live lock froze', async () => {
    const r = fresh(['src/a.ts', 'src/b.ts', 'README.md']);
    const frozen = await r.run(['acquire', 'src/a.ts', '--enforce']);
    expect(frozen.code).toBe(0);
    expect(statSync(path.join(r.root, 'src/a.ts')).mode & 0o222).toBe(0);
    let doc = await r.doctor();
    expect(doc.code).toBe(0);
    expect(byCode(doc.checks, 'frozen')?.message).toMatch(/^1 file frozen by live locks/);
    expect(byCode(doc.checks, 'freeze_left_behind')).toBeUndefined();

    chmodSync(path.join(r.root, 'src/b.ts'), 0o444);
    doc = await r.doctor();
    expect(doc.code).toBe(1);
    const found = byCode(doc.checks, 'freeze_left_behind');
    expect(found?.message).toMatch(/1 tracked file is read-only with no lock freezing it .*: src\/b\.ts$/);
    expect(found?.fix).toMatch(/chmod u\+w/);
    // Reported, not repaired.
    expect(statSync(path.join(r.root, 'src/b.ts')).mode & 0o777).toBe(0o444);
    await r.run(['release', 'src/a.ts']);
    chmodSync(path.join(r.root, 'src/b.ts'), 0o644);
  });

  it('reports the other agents whose folder exists: hook missing, installed, or configuration broken', async () => {
    const r = fresh();
    let doc = await r.doctor();
    expect(doc.checks.filter((c) => /^hook_(codex|gemini|cursor)/.test(c.code))).toEqual([]);
    mkdirSync(path.join(r.root, '.codex'));
    mkdirSync(path.join(r.root, '.gemini'));
    writeFileSync(path.join(r.root, '.gemini', 'settings.json'), '{ not json');
    doc = await r.doctor();
    expect(byCode(doc.checks, 'hook_codex_missing')?.fix).toBe('alock hooks install --for codex');
    expect(byCode(doc.checks, 'hook_gemini_invalid')).toBeDefined();
    expect(doc.code).toBe(1);
    writeFileSync(path.join(r.root, '.gemini', 'settings.json'), '{}');
    expect((await r.run(['hooks', 'install', '--for', 'codex,gemini'])).code).toBe(0);
    doc = await r.doctor();
    expect(byCode(doc.checks, 'hook_codex')?.message).toMatch(/installed/);
    expect(byCode(doc.checks, 'hook_gemini')?.message).toMatch(/installed/);
  });

  it('says which harness has its hook, and when a hook cannot find its program', async () => {
    const r = fresh();
    let doc = await r.doctor();
    expect(byCode(doc.checks, 'hook_claude_missing')?.fix).toBe('alock hooks install --for claude');
    expect(byCode(doc.checks, 'hook_git_missing')?.fix).toBe('alock hooks install --git');

    expect((await r.run(['hooks', 'install', '--for', 'claude'])).code).toBe(0);
    expect((await r.run(['hooks', 'install', '--git'])).code).toBe(0);
    doc = await r.doctor();
    expect(byCode(doc.checks, 'hook_claude')?.message).toMatch(
      /^Claude Code: PreToolUse hook in .*settings\.json$/,
    );
    expect(byCode(doc.checks, 'hook_git')?.message).toMatch(/^git: pre-commit guard at .*pre-commit$/);
    // The hook runs node and the bin by absolute path: once they are gone, every call is refused.
    const settings = path.join(r.root, '.claude', 'settings.json');
    const bin = realpathSync(path.resolve('bin/alock.js'));
    writeFileSync(settings, readFileSync(settings, 'utf8').replaceAll(bin, '/gone/bin/alock.js'));
    doc = await r.doctor();
    expect(doc.code).toBe(1);
    expect(byCode(doc.checks, 'hook_claude_stale')?.message).toContain('/gone/bin/alock.js');
    expect(byCode(doc.checks, 'hook_claude_stale')?.fix).toBe('alock hooks install --for claude');
    // An entry written before absolute paths runs `alock` from PATH: without one, exit 127 lets edits through.
    writeFileSync(
      settings,
      JSON.stringify({
        hooks: {
          PreToolUse: [
            { matcher: 'Edit', hooks: [{ type: 'command', command: 'alock hooks claude-pre-tool-use' }] },
          ],
        },
      }),
    );
    const bare = mkdtempSync(path.join(os.tmpdir(), 'alock-path-'));
    try {
      doc = await r.doctor({ PATH: `${bare}:/usr/bin:/bin` });
      expect(byCode(doc.checks, 'hook_claude_unrunnable')?.message).toMatch(/exit 127/);
      // An install that works today (the package is not on npm yet), and the one for later.
      expect(byCode(doc.checks, 'hook_claude_unrunnable')?.fix).toMatch(
        /^install agent-lock where the hook looks \(from a clone of agent-lock: npm ci && npm run build && npm install -g \. ;.*once published: npm install -g agent-lock\)/,
      );
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });

  it('says whether Codex, Gemini CLI and Copilot CLI will run the hook, from the trust each keeps', async () => {
    const r = fresh();
    for (const dir of ['.codex', '.gemini', '.github/hooks'])
      mkdirSync(path.join(r.root, dir), { recursive: true });
    expect((await r.run(['hooks', 'install', '--for', 'codex,gemini,copilot'])).code).toBe(0);
    const home = mkdtempSync(path.join(os.tmpdir(), 'alock-home-'));
    try {
      let doc = await r.doctor({ HOME: home });
      expect(doc.code).toBe(1);
      expect(byCode(doc.checks, 'hook_codex_untrusted')?.message).toMatch(
        /project is not trusted.*hooks\.state/,
      );
      expect(byCode(doc.checks, 'hook_gemini_untrusted')?.message).toContain('trustedFolders.json');
      expect(byCode(doc.checks, 'hook_copilot_untrusted')?.message).toContain('trusted_folders');

      mkdirSync(path.join(home, '.codex'));
      const hooks = path.join(r.root, '.codex', 'hooks.json');
      writeFileSync(
        path.join(home, '.codex', 'config.toml'),
        `model = "gpt-5"\n\n[projects.${JSON.stringify(r.root)}]\ntrust_level = "trusted"\n\n[hooks.state.${JSON.stringify(`${hooks}:pre_tool_use:0:0`)}]\ntrusted_hash = "sha256:00ff"\n`,
      );
      mkdirSync(path.join(home, '.gemini'));
      writeFileSync(
        path.join(home, '.gemini', 'trustedFolders.json'),
        JSON.stringify({
          [path.join(r.root, 'x')]: 'TRUST_PARENT',
          [path.join(r.root, 'sub')]: 'DO_NOT_TRUST',
        }),
      );
      mkdirSync(path.join(home, '.copilot'));
      writeFileSync(
        path.join(home, '.copilot', 'config.json'),
        JSON.stringify({ trusted_folders: [path.dirname(r.root)] }),
      );
      doc = await r.doctor({ HOME: home });
      expect(byCode(doc.checks, 'hook_codex_trust')).toBeDefined();
      expect(byCode(doc.checks, 'hook_gemini_trust')).toBeDefined();
      expect(byCode(doc.checks, 'hook_copilot_trust')).toBeDefined();
      expect(doc.checks.filter((c) => /_untrusted$/.test(c.code))).toEqual([]);
      // A node or bin that moved away: the hook refuses every call until it is installed again.
      const bin = realpathSync(path.resolve('bin/alock.js'));
      writeFileSync(hooks, readFileSync(hooks, 'utf8').replaceAll(bin, '/gone/bin/alock.js'));
      doc = await r.doctor({ HOME: home });
      expect(byCode(doc.checks, 'hook_codex_stale')?.fix).toBe('alock hooks install --for codex');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('says when the parent agent was inferred, without counting it a problem', async () => {
    const r = fresh();
    const doc = await r.doctor({ AGENT_ID: 'worker' });
    const inferred = byCode(doc.checks, 'parent_inferred');
    expect(inferred?.level).toBe('note');
    expect(inferred?.fix).toMatch(/AGENT_PARENT_ID/);
    const named = await r.doctor({ AGENT_ID: 'worker', AGENT_PARENT_ID: 'lead' });
    expect(byCode(named.checks, 'parent_inferred')).toBeUndefined();
    expect(byCode(named.checks, 'parent')?.message).toBe('parent lead (from AGENT_PARENT_ID)');
    const none = await r.doctor({ AGENT_ID: 'worker', AGENT_PARENT_ID: 'none' });
    expect(byCode(none.checks, 'parent_inferred')).toBeUndefined();
    expect(byCode(none.checks, 'parent')).toBeUndefined();
  });

  it('reports a bad setting as a finding naming the variable (exit 1, not an error)', async () => {
    const r = fresh();
    await r.run(['acquire', '@x']);
    const doc = await r.doctor({ AGENT_LOCK_STALE_MINUTES: 'soon' });
    expect(doc.code).toBe(1);
    expect(doc.body.error).toBeNull();
    const found = byCode(doc.checks, 'settings_invalid');
    expect(found?.message).toMatch(/^AGENT_LOCK_STALE_MINUTES must be/);
    expect(found?.fix).toBe('fix or unset AGENT_LOCK_STALE_MINUTES');
  });

  it('reports a bad setting of the hooks or the git guard, which every hook call would refuse over', async () => {
    const r = fresh();
    for (const [name, value] of [
      ['AGENT_LOCK_GUARD', 'maybe'],
      ['AGENT_LOCK_HOOK_ON_ERROR', 'maybe'],
      ['AGENT_LOCK_HOOK_SHELL_UNPARSED', 'x'],
    ] as const) {
      const doc = await r.doctor({ [name]: value });
      expect(doc.code, name).toBe(1);
      expect(byCode(doc.checks, 'settings_invalid')?.message).toMatch(new RegExp(`^${name} must be`));
      expect(byCode(doc.checks, 'settings')).toBeUndefined();
    }
  });

  it('refuses a --dir that is no folder: one line, exit 2', async () => {
    const r = fresh();
    const bad = await r.run(['--dir', path.join(r.root, 'nope'), 'doctor']);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(
      /^ERROR: alock: .*nope is not an existing folder \(run it inside the tree, or pass --dir\)\n$/,
    );
  });
});

describe('what doctor makes of a Redis server', () => {
  const facts: ServerFacts = {
    version: '7.2.4',
    serverMs: 1_000_000,
    localMs: 1_000_000,
    maxmemoryPolicy: 'noeviction',
  };
  const levels = (f: ServerFacts) =>
    Object.fromEntries(serverFindings(f, 'redis://h:6379').map((x) => [x.code, x.level]));

  it('passes a current server with clocks in step and no eviction', () => {
    expect(levels(facts)).toEqual({ redis_version: 'ok', clock_skew: 'ok', maxmemory_policy: 'ok' });
  });

  it('flags a clock more than 2 s off either way, not one within it', () => {
    expect(levels({ ...facts, serverMs: facts.localMs + 1900 }).clock_skew).toBe('ok');
    expect(levels({ ...facts, serverMs: facts.localMs + 5000 }).clock_skew).toBe('problem');
    const ahead = serverFindings({ ...facts, serverMs: facts.localMs - 5000 }, 'redis://h:6379');
    expect(ahead.find((x) => x.code === 'clock_skew')?.message).toMatch(
      /^this host's clock is 5\.0s ahead of/,
    );
  });

  it('flags a server older than 6.2 and an evicting policy; notes a policy it would not tell', () => {
    expect(levels({ ...facts, version: '6.0.16' }).redis_version).toBe('problem');
    expect(levels({ ...facts, version: '6.2.0' }).redis_version).toBe('ok');
    expect(levels({ ...facts, maxmemoryPolicy: 'allkeys-lru' }).redis_eviction).toBe('problem');
    expect(levels({ ...facts, maxmemoryPolicy: null }).maxmemory_policy_unknown).toBe('note');
  });
});
