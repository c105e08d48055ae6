/**
 * A command of the command line as one unit, in the manner of citty's defineCommand: its name,
 * arguments, summary and flags (what --help, completion and `alock contract` show) beside the
 * function that runs it. Its answers (exit 0 and exit 1) come from the shared contract.
 */
import type { Answer } from '../answers/answer.js';
import { ANSWER_TABLE, ENVIRONMENT, EXIT_CODES, LOCK_FIELDS, WARNING_CODES } from '../answers/contract.js';
import type { Cli } from './context.js';

export interface FlagSpec {
  readonly flags: string;
  readonly description: string;
}

export interface CommandSpec {
  readonly name: string;
  readonly aliases?: readonly string[];
  readonly args: string;
  readonly summary: string;
  readonly flags: readonly FlagSpec[];
  /** Answers that exit 0. */
  readonly ok: readonly string[];
  /** Answers that exit 1. */
  readonly fail: readonly string[];
  /** Answers with another exit code (a signal's, a program's), each with that code. */
  readonly other?: Readonly<Record<string, string>>;
}

/** What a command module defines; `run` gets commander's arguments (positionals, then the flags). */
export interface CommandDef extends Omit<CommandSpec, 'ok' | 'fail' | 'other'> {
  /** Absent for a command commander itself answers (help). */
  // biome-ignore lint/suspicious/noExplicitAny: commander hands its parsed arguments over untyped
  readonly run?: (cli: Cli, ...args: any[]) => Promise<Answer>;
}

export interface CliCommand extends CommandDef, CommandSpec {}

export function defineCommand(def: CommandDef): CliCommand {
  const answers = ANSWER_TABLE[def.name] ?? { ok: [], fail: [] };
  return { ...def, ok: answers.ok, fail: answers.fail, ...(answers.other ? { other: answers.other } : {}) };
}

export const GLOBAL_FLAGS: readonly FlagSpec[] = [
  { flags: '--dir <path>', description: 'work as if started in this folder' },
  { flags: '--json', description: 'print exactly one JSON object' },
  { flags: '--backend <name>', description: "file or redis (must match the store's marker)" },
];

/** The document `alock contract` prints: the commands given, with the shared contract. */
export function describeContract(version: string, commands: readonly CommandSpec[]): unknown {
  return {
    schema: 'agent-lock/v1',
    version,
    usage: 'alock [--dir PATH] [--json] [--backend file|redis] COMMAND ...',
    global_flags: GLOBAL_FLAGS,
    commands: commands.map((c) => ({
      name: c.name,
      aliases: c.aliases ?? [],
      args: c.args,
      summary: c.summary,
      flags: c.flags,
      answers: { exit_0: c.ok, exit_1: c.fail, ...(c.other ? { other: c.other } : {}) },
    })),
    exit_codes: EXIT_CODES,
    json_envelope: [
      'schema',
      'command',
      'status',
      'ok',
      'exit_code',
      'agent',
      'locks',
      'conflicts',
      'message',
      'error',
      'warnings',
    ],
    warnings: {
      shape: '[{"code","message",...details}]',
      rule: 'a warning never changes the status, ok or exit_code of an answer',
      codes: WARNING_CODES,
    },
    lock_fields: LOCK_FIELDS,
    lock_statuses: ['active', 'orphaned', 'waiting'],
    environment: ENVIRONMENT,
    // What `run` exports to its command (fences and tokens: one per scope, space-separated).
    run_environment: ['AGENT_LOCK_FENCE', 'AGENT_LOCK_TOKEN', 'AGENT_ID', 'AGENT_PARENT_ID'],
  };
}
