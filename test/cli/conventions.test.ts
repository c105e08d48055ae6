/** `--version`, `-V` and `help COMMAND`: the spellings users bring from other command-line tools. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conventionalArgv } from '../../src/cli/conventions.js';
import { VERSION } from '../../src/cli/run-cli.js';
import { makeSandbox, type Sandbox } from './cli-harness.js';

let box: Sandbox;
beforeAll(() => {
  box = makeSandbox();
});
afterAll(() => box.cleanup());

describe('--version and -V', () => {
  it.each([['--version'], ['-V']])('%s prints the version like `alock version`, exit 0', async (flag) => {
    const plain = await box.run('A', ['version']);
    const r = await box.run('A', [flag]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`${VERSION}\n`);
    expect(r.stdout).toBe(plain.stdout);
  });

  it('answers in JSON with --json, after global flags', async () => {
    const r = await box.json('A', ['--dir', box.tree, '-V']);
    expect(r.code).toBe(0);
    expect(r.body).toMatchObject({ command: 'version', status: 'version', ok: true, version: VERSION });
  });

  it('is an unknown option after a command word, not a silent version', async () => {
    const r = await box.run('A', ['acquire', '@x', '--version']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^ERROR: alock: unknown option '--version' \(see --help\)\n$/);
  });
});

describe('help COMMAND', () => {
  it('alock help acquire prints the same help as acquire --help, exit 0', async () => {
    const viaHelp = await box.run('A', ['help', 'acquire']);
    const viaFlag = await box.run('A', ['acquire', '--help']);
    expect(viaHelp.code).toBe(0);
    expect(viaFlag.code).toBe(0);
    expect(viaHelp.stdout).toContain('Usage: alock acquire');
    expect(viaHelp.stdout).toContain('--ttl <seconds>');
    expect(viaHelp.stdout).toBe(viaFlag.stdout);
    expect(viaHelp.stderr).toBe('');
  });

  it('alock help alone prints the program help', async () => {
    const r = await box.run('A', ['help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: alock');
    expect(r.stdout).toContain('acquire');
  });

  it('help of an unknown command is one error line, exit 2', async () => {
    const r = await box.run('A', ['help', 'acquier']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^ERROR: alock: unknown command 'acquier'/);
  });

  it('leaves a scope or a run command named help alone', () => {
    expect(conventionalArgv(['acquire', 'help'])).toEqual(['acquire', 'help']);
    expect(conventionalArgv(['--dir', 'help', 'list'])).toEqual(['--dir', 'help', 'list']);
    expect(conventionalArgv(['--json', 'help', 'list'])).toEqual(['--json', 'list', '--help']);
  });
});
