/**
 * Every shell form that once wrote a held file unchecked, fed to `alock hooks claude-pre-tool-use`
 * in-process against a real file store in a real git checkout while another agent holds src/a.ts:
 * each is refused before it runs. Beside them, the plain commands that must still go, and the test
 * that lets the hook skip the shell grammar: no word of a command reaches a held file only when the
 * grammar finds no held file among its targets either.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { pathMeetsScope, wordsReach } from '../../src/integrations/shell-reach.js';
import { shellWriteTargets } from '../../src/integrations/shell-writes.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = makeSandbox();
  execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
  writeFileSync(path.join(sandbox.tree, 'src', 'a.ts'), 'export const a = 1;\n');
  expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(0);
});
afterAll(() => sandbox.cleanup());

async function hook(command: string, env: Record<string, string> = {}) {
  let stdout = '';
  const stdin = JSON.stringify({
    session_id: '11112222-3333-4444-5555-666677778888',
    cwd: sandbox.tree,
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: { command },
  });
  await runCli(['hooks', 'claude-pre-tool-use'], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: () => {},
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', HOME: sandbox.tree, ...env },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  const out = stdout.trim() === '' ? null : JSON.parse(stdout);
  return out?.hookSpecificOutput?.permissionDecision === 'deny'
    ? String(out.hookSpecificOutput.permissionDecisionReason)
    : null;
}

/** Each writes src/a.ts (or the whole tree, or runs code that names it). */
const REFUSED = [
  'echo x >& src/a.ts',
  'echo x 1>&src/a.ts',
  'echo x > >(tee src/a.ts)',
  'exec > >(tee src/a.ts)',
  "echo x > $'src/a.ts'",
  "r''m src/a.ts",
  '"r"m src/a.ts',
  'r\\m src/a.ts',
  "echo x | t'ee' src/a.ts",
  'echo x > ~/src/a.ts',
  'ln -s a.ts src/al && echo x > src/al',
  'pushd src && rm a.ts',
  'command cd src && rm a.ts',
  'builtin cd src && rm a.ts',
  'env -C src rm a.ts',
  'stdbuf -oL rm src/a.ts',
  'flock /tmp/alock-test.lock rm src/a.ts',
  'setsid rm src/a.ts',
  'ionice -c3 rm src/a.ts',
  'git checkout other',
  'git switch other',
  'git merge other',
  'git pull',
  'git cherry-pick abc123',
  'git rebase main',
  'git read-tree -u HEAD',
  'git apply fix.diff',
  'git clean --force',
  "sed -n 'w src/a.ts' docs/b.md",
  'uniq docs/b.md src/a.ts',
  'gzip src/a.ts',
  'tar xf x.tar',
  "ex -sc '%s/1/2/|x' src/a.ts",
  "vim -es -c 'wq' src/a.ts",
  `awk '{print > "src/a.ts"}' docs/b.md`,
  "python3 -c \"open('src/a.ts','w').write('x')\"",
  "node -e \"require('fs').writeFileSync('src/a.ts','x')\"",
  "echo 'echo x > src/a.ts' | bash",
  'cat <<EOF > src/a.ts\nno end',
  // The README's earlier list of what was not read.
  'find src -name "*.ts" -delete',
  'ls src | xargs rm',
  'sort -o src/a.ts docs/b.md',
  'rsync -a docs/b.md src/a.ts',
  'patch -p1 < fix.diff',
  'awk -i inplace 1 src/a.ts',
  "eval 'rm src/a.ts'",
  // Codex's apply_patch through its shell tool.
  "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.ts\n@@\n-export const a = 1;\n+export const a = 2;\n*** End Patch\nEOF",
  // Shapes the light reader answers on its own.
  'cd src && echo x >> a.ts 2>&1',
  'npm run build 2>&1 | tee src/a.ts',
  'FOO=1 rm -f -- src/a.ts',
];

/** Plain commands that write no held file. */
const ALLOWED = [
  'ls -la src',
  'git status 2>&1',
  'git diff --stat && git log --oneline -5',
  'npm run build 2>&1 | tail -5',
  'cd src && npm test',
  'npm test > /dev/null 2>&1',
  'echo x > src/b.ts',
  'cat <<EOF > docs/b.md\nhello\nEOF',
  'git commit -m "$(cat <<\'EOF\'\nFix a thing\nEOF\n)"',
  "python3 -c 'print(1)'",
  'git checkout -b fresh',
  'curl -s https://example.com | head -3',
];

describe('a held file behind every shell form', () => {
  it.each(REFUSED)('%j is refused, naming the holder', async (command) => {
    const reason = await hook(command);
    expect(reason).toContain('other-agent');
  });

  it.each(ALLOWED)('%j goes', async (command) => {
    expect(await hook(command)).toBeNull();
  });

  it('lets an unreadable command that names no held file go, and refuses it under =deny', async () => {
    expect(await hook('cat <<EOF > docs/b.md\nno end')).toBeNull();
    expect(await hook('cat <<EOF > docs/b.md\nno end', { AGENT_LOCK_HOOK_SHELL_UNPARSED: 'deny' })).toContain(
      'AGENT_LOCK_HOOK_SHELL_UNPARSED=deny',
    );
  });

  it('lets an unreadable command that names a held file go under =allow', async () => {
    expect(
      await hook('cat <<EOF > src/a.ts\nno end', { AGENT_LOCK_HOOK_SHELL_UNPARSED: 'allow' }),
    ).toBeNull();
  });
});

describe('words that reach a held scope', () => {
  const root = '/repo';
  const facts = {
    home: '/home/me',
    realpath: (p: string) => p,
    isDirectory: (p: string) => ['/repo/src', '/repo/src/lib', '/repo/docs'].includes(p),
    inCheckout: () => false,
  };
  const HELD = ['src/a.ts', 'docs/**', 'lib/**/*.md'];

  it.each([
    ['src', 'src/a.ts', true],
    ['src/a.ts', 'src/a.ts', true],
    ['src/b.ts', 'src/a.ts', false],
    ['docs/x/y.md', 'docs/**', true],
    ['lib', 'lib/**/*.md', true],
    ['lib/x/y.ts', 'lib/**/*.md', false],
    ['lib/x/y.md', 'lib/**/*.md', true],
    ['', 'src/a.ts', true],
    ['src/*.ts', 'src/a.ts', true],
  ])('%j meets %j: %s', (rel, scope, expected) => {
    expect(pathMeetsScope(rel, scope, () => false)).toBe(expected);
  });

  it('lets the commit every agent makes skip the grammar, held locks or not', () => {
    const commit = 'git commit -m "$(cat <<\'EOF\'\nFix the loop\nEOF\n)"';
    expect(wordsReach(commit, root, root, [], facts).kind).toBe('none');
    expect(wordsReach(commit, root, root, HELD, facts).kind).toBe('none');
    expect(
      wordsReach('git checkout main 2>&1 | tail -3 && echo "$(date)"', root, root, HELD, facts).kind,
    ).toBe('unsure');
  });

  // Whenever the grammar finds a target in a held scope, some word reaches it too: the hook may skip
  // the grammar when none does.
  it.each([...REFUSED, ...ALLOWED, 'cd src/lib && cd .. && echo x > a.ts', 'cp x.ts docs', 'rm -rf .'])(
    '%j',
    async (command) => {
      const writes = await shellWriteTargets(command, root, facts);
      const reach = wordsReach(command, root, root, HELD, facts);
      if (writes.kind === 'unparsed') return;
      const hit = writes.files.some((file) =>
        HELD.some((scope) => pathMeetsScope(path.relative(root, file), scope, () => facts.isDirectory(file))),
      );
      if (hit) expect(reach.kind).not.toBe('none');
    },
  );
});
