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

/**
 * The options commander hands a command, derived from its flag strings, as commander reads them:
 * `--shared` true when given, `--ttl <seconds>` a string, `--scope <scope...>` (or `--id <id...>`,
 * which collects) a list, `--wait [seconds]` a string or true, `--no-wait` false (true by default),
 * `-w <seconds>` under its short name, `--conflict-exit-code` as `conflictExitCode`. A flag of the
 * same name twice (`--wait [seconds]`, `--no-wait`) gives the union of both.
 */
export type OptionsOf<F extends readonly FlagSpec[]> = F extends readonly []
  ? // Mapped over no flags at all, the type below is an index signature that takes any name.
    { [K in never]: never }
  : { -readonly [S in F[number]['flags'] as OptionKey<S>]?: OptionValue<S> };

/** The long name if there is one, else the short one, without its value: `-m, --message <x>` → `message`. */
type FlagName<S extends string> = S extends `${string}--${infer Long}`
  ? FirstWord<Long>
  : S extends `-${infer Short}`
    ? FirstWord<Short>
    : never;
type FirstWord<S extends string> = S extends `${infer Word} ${string}` ? Word : S;
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}`
  ? `${Head}${Capitalize<Camel<Tail>>}`
  : S;
type OptionKey<S extends string> = FlagName<S> extends `no-${infer Name}` ? Camel<Name> : Camel<FlagName<S>>;
type OptionValue<S extends string> = S extends `${string}--no-${string}`
  ? boolean
  : S extends `${string}<${string}...>`
    ? string[]
    : S extends `${string}<${string}>`
      ? string
      : S extends `${string}[${string}]`
        ? string | true
        : true;

/** The positional arguments of an `args` string: `<a>` a string, `<a...>` a list, `[a]` maybe one. */
type Positionals<A extends string> = A extends ''
  ? []
  : A extends `${infer Word} ${infer Rest}`
    ? [Positional<Word>, ...Positionals<Rest>]
    : [Positional<A>];
type Positional<W extends string> = W extends `${'<' | '['}${string}...${'>' | ']'}`
  ? string[]
  : W extends `<${string}>`
    ? string
    : W extends `[${string}]`
      ? string | undefined
      : never;

/** What `run` is given after the context: the positionals of `args`, then the options of `flags`. */
export type RunArgs<A extends string, F extends readonly FlagSpec[]> = [...Positionals<A>, OptionsOf<F>];

/** What a command module defines; `run` gets its arguments typed from `args` and `flags`. */
export interface CommandDef<A extends string = string, F extends readonly FlagSpec[] = readonly FlagSpec[]>
  extends Omit<CommandSpec, 'ok' | 'fail' | 'other' | 'args' | 'flags'> {
  readonly args: A;
  readonly flags: F;
  /** Absent for a command commander itself answers (help). */
  readonly run?: (cli: Cli, ...args: RunArgs<A, F>) => Promise<Answer>;
}

/** A command in the table: commander calls `run` with what it parsed from the same spec. */
export interface CliCommand extends CommandSpec {
  readonly run?: (cli: Cli, ...args: unknown[]) => Promise<Answer>;
}

export function defineCommand<const A extends string, const F extends readonly FlagSpec[]>(
  def: CommandDef<A, F>,
): CliCommand {
  const answers = ANSWER_TABLE[def.name] ?? { ok: [], fail: [] };
  return {
    ...def,
    // The one untyped edge: commander parses argv by this command's own args and flags, the very
    // strings RunArgs reads, so what it passes has the shape run was typed with.
    run: def.run as CliCommand['run'],
    ok: answers.ok,
    fail: answers.fail,
    ...(answers.other ? { other: answers.other } : {}),
  };
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
