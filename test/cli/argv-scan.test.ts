/**
 * The one pre-scan of the arguments (src/cli/argv-scan.ts), and what reaches the user when the
 * command or a flag is mistyped: commander's suggestion, which the one-line error used to cut off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanArgv } from '../../src/cli/argv-scan.js';
import { makeSandbox, type Sandbox } from './cli-harness.js';

let box: Sandbox;
beforeAll(() => {
  box = makeSandbox();
});
afterAll(() => box.cleanup());

describe('scanArgv', () => {
  it('finds the command word past global flags and the values of --dir and --backend', () => {
    expect(scanArgv(['--dir', 'help', '--backend', 'file', 'ls', 'x'])).toEqual({
      at: 4,
      word: 'ls',
      command: 'list',
    });
    expect(scanArgv(['--json', 'aquire', 'x'])).toEqual({ at: 1, word: 'aquire', command: null });
    expect(scanArgv(['--dir', 'run'])).toEqual({ at: -1, word: undefined, command: null });
  });
});

describe('a mistyped command or flag', () => {
  it.each([
    [['aquire', 'x'], "ERROR: alock: unknown command 'aquire' (Did you mean acquire? See --help)"],
    [['--dir', '.', 'lsit'], "ERROR: alock: unknown command 'lsit' (Did you mean list? See --help)"],
    [['acquire', '--wiat', 'x'], "ERROR: alock: unknown option '--wiat' (Did you mean --wait? See --help)"],
  ])('%j prints the suggestion in its one line, exit 2', async (argv, line) => {
    const r = await box.run('A', argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${line}\n`);
  });

  it('with nothing close, says only where to look', async () => {
    const r = await box.run('A', ['zzzzzz']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe("ERROR: alock: unknown command 'zzzzzz' (see --help)\n");
  });
});
