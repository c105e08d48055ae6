/**
 * The commander program, built from the command table: one subcommand per command module, each
 * running its module's `run` and handing the answer back.
 */
import { Command, Option } from 'commander';
import type { Answer } from '../answers/answer.js';
import { GLOBAL_FLAGS } from './command.js';
import type { Cli } from './context.js';
import { COMMANDS } from './contract.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function buildProgram(cli: Cli, setAnswer: (a: Answer) => void, only: string | null): Command {
  const program = new Command(cli.name);
  program
    .description('advisory locks and leases for AI coding agents sharing a checkout or a fleet of machines')
    .helpOption('-h, --help', 'show help')
    .helpCommand('help [command]', "show a command's help (same as COMMAND --help)")
    .showSuggestionAfterError(true)
    .allowExcessArguments(false);
  for (const flag of GLOBAL_FLAGS) program.option(flag.flags, flag.description);

  for (const spec of COMMANDS) {
    const run = spec.run;
    // `help` is commander's own; building every other subcommand costs milliseconds of cold start,
    // and a call that names one needs only it.
    if (run === undefined || (only !== null && only !== spec.name)) continue;
    const command = program
      .command(`${spec.name}${spec.args ? ` ${spec.args}` : ''}`)
      .description(spec.summary);
    for (const alias of spec.aliases ?? []) command.alias(alias);
    for (const flag of spec.flags) {
      command.addOption(
        flag.flags.startsWith('--id')
          ? new Option(flag.flags, flag.description).argParser(collect)
          : new Option(flag.flags, flag.description),
      );
    }
    command.allowExcessArguments(false);
    command.action(async (...args: unknown[]) => {
      setAnswer(await run(cli, ...args));
    });
  }
  return program;
}
