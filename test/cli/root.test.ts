/**
 * `acquire --enforce` as root (uid 0): root writes through the read-only modes a freeze sets, so the
 * answer warns W_ENFORCE_AS_ROOT and `doctor` says so. Run as root directly, or as root of a user
 * namespace (`unshare -r`) when the suite runs as an ordinary user.
 */
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, requireBuild } from '../race/helpers.js';
import { makeSandbox, parseOneJson, type Sandbox } from './cli-harness.js';

let box: Sandbox;
beforeEach(() => {
  requireBuild();
  box = makeSandbox();
  spawnSync('git', ['init', '-q'], { cwd: box.tree });
  writeFileSync(path.join(box.tree, 'src', 'a.ts'), 'one\n');
  spawnSync('git', ['add', '.'], { cwd: box.tree });
});
afterEach(() => box.cleanup());

const isRoot = process.getuid?.() === 0;
const canUnshare = !isRoot && spawnSync('unshare', ['-r', 'true']).status === 0;

/** The built CLI as uid 0: this process's user when it is root, else root of a user namespace. */
function asRoot(argv: string[]) {
  const [command, args] = isRoot
    ? [process.execPath, [CLI, ...argv]]
    : ['unshare', ['-r', process.execPath, CLI, ...argv]];
  return spawnSync(command, args, {
    cwd: box.tree,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...box.envFor('A', { AGENT_PARENT_ID: 'none' }),
    },
    encoding: 'utf8',
  });
}

// Loud: without root, nor a user namespace to be root in, uid 0 cannot be tried here.
describe.skipIf(!isRoot && !canUnshare)('acquire --enforce as root', () => {
  it('warns W_ENFORCE_AS_ROOT (root writes through the frozen mode), and doctor says so', () => {
    const json = asRoot(['--json', 'acquire', '--enforce', '--ttl', '600', 'src/a.ts']);
    const body = parseOneJson(json.stdout);
    expect(body).toMatchObject({ status: 'acquired', exit_code: 0 });
    expect(body.warnings).toEqual([expect.objectContaining({ code: 'W_ENFORCE_AS_ROOT' })]);
    const file = path.join(box.tree, 'src', 'a.ts');
    expect(statSync(file).mode & 0o222).toBe(0);
    // The warning is true: uid 0 writes the read-only file.
    if (isRoot) {
      writeFileSync(file, 'two\n');
      expect(statSync(file).size).toBe(4);
    }

    const text = asRoot(['acquire', '--enforce', '--ttl', '600', 'src/b.ts']);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^WARNING W_ENFORCE_AS_ROOT running as root \(uid 0\)/m);

    const doctor = asRoot(['--json', 'doctor']);
    const findings = (parseOneJson(doctor.stdout) as unknown as { checks: { code: string; level: string }[] })
      .checks;
    expect(findings).toContainEqual(expect.objectContaining({ code: 'enforce_as_root', level: 'note' }));
  });

  it('does not warn on acquire without --enforce', () => {
    const body = parseOneJson(asRoot(['--json', 'acquire', 'src/a.ts']).stdout);
    expect(body).toMatchObject({ status: 'acquired', warnings: [] });
  });
});
