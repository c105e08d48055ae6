/**
 * The one look at the arguments before commander parses them: where the command word is. Global
 * flags that take a value (`--dir PATH`, `--backend NAME`, from GLOBAL_FLAGS) are skipped with their
 * value, so `--dir help list` names `list`, not `help`. `run`'s split at `--`, the conventions
 * (`help X`, `--version`) and the subcommand to build all read it from here.
 */
import { GLOBAL_FLAGS } from './command.js';
import { COMMANDS } from './contract.js';

const VALUE_FLAGS = new Set(
  GLOBAL_FLAGS.filter((f) => f.flags.includes('<')).map((f) => f.flags.split(' ')[0]!),
);

export interface ScannedArgv {
  /** Index of the first word that is no flag and no global flag's value; -1 when there is none. */
  readonly at: number;
  /** That word as typed. */
  readonly word: string | undefined;
  /** The command it names (an alias resolved), or null for no word or an unknown one. */
  readonly command: string | null;
}

export function scanArgv(argv: readonly string[]): ScannedArgv {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (VALUE_FLAGS.has(arg)) {
      i++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    const spec = COMMANDS.find((c) => c.name === arg || c.aliases?.includes(arg));
    return { at: i, word: arg, command: spec ? spec.name : null };
  }
  return { at: -1, word: undefined, command: null };
}
