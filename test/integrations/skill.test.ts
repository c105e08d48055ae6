/** `alock skill path` and `alock skill install`: the bundled SKILL.md, copied safely. */
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeSandbox, STACK_FRAME, type Sandbox } from '../cli/cli-harness.js';

const BUNDLED = path.resolve(import.meta.dirname, '../../assets/skill/SKILL.md');

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

const claudeSkill = () => path.join(sandbox.tree, '.claude', 'skills', 'agent-lock', 'SKILL.md');

describe('the bundled skill', () => {
  it('has the front matter agents load skills by, and teaches the protocol', () => {
    const text = readFileSync(BUNDLED, 'utf8');
    const front = /^---\n([\s\S]*?)\n---\n/.exec(text)?.[1] ?? '';
    expect(front).toMatch(/^name: agent-lock$/m);
    expect(front).toMatch(/^description: .{40,}$/m);
    for (const needle of [
      'alock acquire',
      '-m',
      'AGENT_ID',
      'AGENT_PARENT_ID',
      'ACQUIRED',
      'ALREADY YOURS',
      'HELD',
      'REFUSED',
      'INTERRUPTED WORK',
      'exit',
      'alock note',
      'alock release --all',
      '@merge --ttl',
      'alock renew',
    ]) {
      expect(text, needle).toContain(needle);
    }
  });
});

describe('alock skill path', () => {
  it("prints the bundled file's absolute path", async () => {
    const r = await sandbox.run('me', ['skill', 'path']);
    expect(r.code).toBe(0);
    const printed = r.stdout.trim();
    expect(path.isAbsolute(printed)).toBe(true);
    expect(printed).toBe(BUNDLED);
  });
});

describe('alock skill install', () => {
  it('installs into the tree for Claude Code by default, then answers unchanged', async () => {
    const r = await sandbox.run('me', ['skill', 'install']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`INSTALLED ${claudeSkill()}`);
    expect(readFileSync(claudeSkill(), 'utf8')).toBe(readFileSync(BUNDLED, 'utf8'));
    const again = await sandbox.json('me', ['skill', 'install', '--for', 'claude']);
    expect(again.code).toBe(0);
    expect(again.body.status).toBe('unchanged');
  });

  it('installs at the top of the git checkout from a sub-folder', async () => {
    execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
    await sandbox.run('me', ['--dir', 'src/lib', 'skill', 'install']);
    expect(existsSync(claudeSkill())).toBe(true);
  });

  it("installs for Codex into the repository's .agents/skills", async () => {
    const r = await sandbox.json('me', ['skill', 'install', '--for', 'codex']);
    expect(r.body.status).toBe('installed');
    const file = path.join(sandbox.tree, '.agents', 'skills', 'agent-lock', 'SKILL.md');
    expect(readFileSync(file, 'utf8')).toBe(readFileSync(BUNDLED, 'utf8'));
  });

  it('installs into the folder --into names', async () => {
    const r = await sandbox.run('me', ['skill', 'install', '--into', '../repo-other/skills']);
    expect(r.code).toBe(0);
    expect(existsSync(path.join(sandbox.outside, 'skills', 'agent-lock', 'SKILL.md'))).toBe(true);
  });

  it('refuses to overwrite a different file without --force, and replaces it with --force', async () => {
    mkdirSync(path.dirname(claudeSkill()), { recursive: true });
    writeFileSync(claudeSkill(), 'my own notes\n');
    const refused = await sandbox.run('me', ['skill', 'install']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^ERROR: alock: .*differs from the bundled skill \(pass --force/);
    expect(refused.stderr).not.toMatch(STACK_FRAME);
    expect(readFileSync(claudeSkill(), 'utf8')).toBe('my own notes\n');

    const forced = await sandbox.run('me', ['skill', 'install', '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('REPLACED');
    expect(readFileSync(claudeSkill(), 'utf8')).toBe(readFileSync(BUNDLED, 'utf8'));
  });

  it('never replaces a symlinked SKILL.md, even with --force', async () => {
    const theirs = path.join(sandbox.outside, 'SKILL.md');
    writeFileSync(theirs, 'shared skill\n');
    mkdirSync(path.dirname(claudeSkill()), { recursive: true });
    symlinkSync(theirs, claudeSkill());
    for (const argv of [
      ['skill', 'install'],
      ['skill', 'install', '--force'],
    ]) {
      const r = await sandbox.run('me', argv);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('is a symlink');
    }
    expect(lstatSync(claudeSkill()).isSymbolicLink()).toBe(true);
    expect(readFileSync(theirs, 'utf8')).toBe('shared skill\n');
  });

  it('never writes through a symlinked skill folder, even with --force', async () => {
    const theirs = path.join(sandbox.outside, 'agent-lock');
    mkdirSync(theirs);
    writeFileSync(path.join(theirs, 'SKILL.md'), 'shared skill\n');
    mkdirSync(path.join(sandbox.tree, '.claude', 'skills'), { recursive: true });
    symlinkSync(theirs, path.dirname(claudeSkill()));
    const r = await sandbox.run('me', ['skill', 'install', '--force']);
    expect(r.code).toBe(2);
    expect(readFileSync(path.join(theirs, 'SKILL.md'), 'utf8')).toBe('shared skill\n');
  });

  it('refuses an unknown agent and an unknown action', async () => {
    const agent = await sandbox.run('me', ['skill', 'install', '--for', 'cursor']);
    expect(agent.code).toBe(2);
    expect(agent.stderr).toContain('--for must be claude, codex, agents-md or gemini');
    expect((await sandbox.run('me', ['skill', 'frobnicate'])).code).toBe(2);
  });
});

describe('alock skill install --for agents-md|gemini', () => {
  it.each([
    ['agents-md', 'AGENTS.md'],
    ['gemini', 'GEMINI.md'],
  ])(
    'adds its section to an existing %s file once, keeps the rest, and updates it in place',
    async (kind, name) => {
      const file = path.join(sandbox.tree, name);
      writeFileSync(file, '# Project rules\n\nRun npm test before committing.\n');
      const first = await sandbox.json('me', ['skill', 'install', '--for', kind]);
      expect(first.code).toBe(0);
      expect(first.body.status).toBe('installed');
      const installed = readFileSync(file, 'utf8');
      expect(
        installed.startsWith('# Project rules\n\nRun npm test before committing.\n\n<!-- agent-lock:begin'),
      ).toBe(true);
      expect(installed).toContain('alock acquire');
      expect((await sandbox.json('me', ['skill', 'install', '--for', kind])).body.status).toBe('unchanged');
      expect(readFileSync(file, 'utf8')).toBe(installed);
      // An older section is replaced where it stands; text after it stays.
      const begin = installed.indexOf('<!-- agent-lock:begin');
      const marker = installed.slice(begin, installed.indexOf('\n', begin));
      writeFileSync(
        file,
        `${installed.slice(0, begin)}${marker}\nold words\n<!-- agent-lock:end -->\n\n## After\n`,
      );
      expect((await sandbox.json('me', ['skill', 'install', '--for', kind])).body.status).toBe('installed');
      const updated = readFileSync(file, 'utf8');
      expect(updated).not.toContain('old words');
      expect(updated).toBe(`${installed.slice(0, -1)}\n\n## After\n`);
      // A begin marker that is not ours, with an end marker, is refused rather than guessed at.
      writeFileSync(file, '<!-- agent-lock:begin (hand-made) -->\nx\n<!-- agent-lock:end -->\n');
      expect((await sandbox.run('me', ['skill', 'install', '--for', kind])).code).toBe(2);
      expect(readFileSync(file, 'utf8')).toContain('hand-made');
    },
  );

  it('creates the file when there is none, and refuses --into', async () => {
    expect((await sandbox.run('me', ['skill', 'install', '--for', 'gemini'])).code).toBe(0);
    expect(readFileSync(path.join(sandbox.tree, 'GEMINI.md'), 'utf8')).toMatch(/^<!-- agent-lock:begin/);
    const r = await sandbox.run('me', ['skill', 'install', '--for', 'agents-md', '--into', sandbox.outside]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: --for agents-md takes neither --into nor --force \(/);
  });
});
