/**
 * The two spellings users bring from other tools: `alock --version`/`-V` (for `alock version`) and
 * `alock help COMMAND` (for `alock COMMAND --help`). Rewritten before parsing, so that each answer
 * has one implementation (and `--json --version` answers in JSON like `version` does).
 */

import { scanArgv } from './argv-scan.js';
import { COMMANDS } from './contract.js';

export function conventionalArgv(argv: readonly string[]): readonly string[] {
  const { at } = scanArgv(argv);
  if (at >= 0 && argv[at] === 'help') {
    const topic = argv[at + 1];
    // `help` alone is the program's help; `help COMMAND` that command's. An unknown topic is passed on
    // without --help, so that the parser refuses it as an unknown command (with its suggestion):
    // `acquier --help` would print the program's help and exit 0.
    if (topic === undefined) return [...argv.slice(0, at), '--help'];
    const known = COMMANDS.some((c) => c.name === topic || c.aliases?.includes(topic));
    return [...argv.slice(0, at), topic, ...(known ? ['--help'] : [])];
  }
  if (at < 0) {
    const version = argv.findIndex((a) => a === '--version' || a === '-V');
    if (version >= 0) return [...argv.slice(0, version), 'version', ...argv.slice(version + 1)];
  }
  return argv;
}
