/**
 * The contract every front end answers by: which answers of each command exit 0 and which exit 1,
 * the exit codes, the environment and the fields of a lock. The command line's flags live with its
 * commands (src/cli/commands); `alock contract` puts the two together.
 */

/** `run`'s exit code when its lease is lost while the command runs (EX_TEMPFAIL of sysexits.h). */
export const LEASE_LOST_EXIT = 75;

/** The exit code of an answer cut short by a signal: 130 SIGINT (Ctrl-C), 143 SIGTERM, 129 SIGHUP. */
const ABORTED = '130 on SIGINT (Ctrl-C), 143 on SIGTERM, 129 on SIGHUP';

/**
 * What a command answers: `ok` exits 0, `fail` exits 1, and `other` the answers whose exit code is
 * neither (a signal's, a program's), each with the code it exits with. Every status any front end
 * answers is here: `Answer['status']` is the union of them all, so a status outside this table
 * does not compile. `error` (exit 2) is every command's.
 */
interface CommandAnswers {
  readonly ok: readonly string[];
  readonly fail: readonly string[];
  readonly other?: Readonly<Record<string, string>>;
}

export const ANSWERS = {
  acquire: {
    ok: ['acquired', 'already_mine'],
    fail: ['held', 'parent_scope', 'interrupted', 'timeout', 'other_worktree'],
    other: { aborted: `${ABORTED}; nothing taken, no place in line left` },
  },
  run: {
    ok: ['ran'],
    fail: ['held', 'parent_scope', 'interrupted', 'timeout', 'lease_lost', 'other_worktree'],
    other: {
      aborted: `${ABORTED}, while waiting for the lock`,
      failed: '126 when the command cannot be run, 127 when it is not found',
    },
  },
  release: { ok: ['released'], fail: ['not_found', 'refused'] },
  'release-all': { ok: ['released'], fail: [] },
  renew: { ok: ['renewed'], fail: ['expired', 'not_found', 'refused'] },
  check: { ok: ['free', 'mine'], fail: ['held', 'other_worktree'] },
  list: { ok: ['listed'], fail: [] },
  mine: { ok: ['listed'], fail: [] },
  conflicts: { ok: ['clear'], fail: ['conflicting'] },
  note: { ok: ['noted'], fail: ['not_found', 'refused'] },
  ask: { ok: ['asked'], fail: ['free', 'mine'] },
  reply: { ok: ['replied'], fail: ['not_found'] },
  resume: { ok: ['resumed'], fail: ['not_found', 'held'] },
  break: { ok: ['broken'], fail: ['not_found'] },
  log: { ok: ['listed'], fail: [], other: { aborted: `${ABORTED}, ending --follow` } },
  watch: { ok: ['listed'], fail: [], other: { aborted: ABORTED } },
  ui: { ok: [], fail: [], other: { aborted: `${ABORTED}: the dashboard is served until then` } },
  explain: { ok: ['disjoint'], fail: ['conflict'] },
  whoami: { ok: ['identified'], fail: [] },
  version: { ok: ['version'], fail: [] },
  help: { ok: ['help'], fail: [] },
  contract: { ok: ['contract'], fail: [] },
  completion: { ok: ['completion'], fail: [] },
  mcp: { ok: ['served'], fail: [] },
  skill: { ok: ['installed', 'unchanged', 'path'], fail: [] },
  hooks: { ok: ['installed', 'unchanged', 'uninstalled', 'absent', 'allowed', 'denied', 'ended'], fail: [] },
  guard: { ok: ['clear', 'warned'], fail: ['held'] },
  doctor: { ok: ['healthy'], fail: ['findings'] },
  repair: { ok: ['repaired', 'clean'], fail: [] },
  init: { ok: ['initialized'], fail: [] },
} as const satisfies Record<string, CommandAnswers>;

export type CommandName = keyof typeof ANSWERS;
type Table = typeof ANSWERS;
type OtherOf<C extends CommandName> = Table[C] extends { readonly other: infer O } ? keyof O & string : never;
/** The answers of `command` that exit 0 or 1: what a decision of it can come to. */
export type DecidedStatus<C extends CommandName> = Table[C]['ok'][number] | Table[C]['fail'][number];
/** Every answer of `command`, `error` (exit 2) included. */
export type StatusOf<C extends CommandName> = DecidedStatus<C> | OtherOf<C> | 'error';
/** Every status any command answers. */
export type AnyStatus = { [C in CommandName]: StatusOf<C> }[CommandName];

/** The table as data, for `alock contract` and the docs: any command name, looked up safely. */
export const ANSWER_TABLE: Readonly<Record<string, CommandAnswers>> = ANSWERS;

export const EXIT_CODES = {
  0: "the answer you hoped for (see each command's ok answers)",
  1: 'a refusal or miss (held, not_found, refused, expired, parent_scope, interrupted, other_worktree; conflicts: conflicting)',
  2: 'an error: bad usage, invalid scope, scope outside the tree, bad environment value, backend mismatch or unreachable, unreadable store',
  75: 'run: the lease was lost while the command ran (broken, expired, or the store unreachable past its deadline); the command got SIGTERM, then SIGKILL 5 s later',
  130: 'interrupted (Ctrl-C); a wait interrupted by SIGTERM exits 143, by SIGHUP 129, and leaves no place in line',
  run: "the command's own exit code (128+N when a signal N killed it); -E CODE (default 1) when the lock could not be had; 126 the command cannot be run, 127 not found",
} as const;

export const ENVIRONMENT = [
  'AGENT_ID',
  'AGENT_PARENT_ID',
  'AGENT_LOCK_DIR',
  'AGENT_LOCK_TREE',
  'AGENT_LOCK_BACKEND',
  'AGENT_LOCK_REDIS_URL',
  'REDIS_URL',
  'AGENT_LOCK_STALE_MINUTES',
  'AGENT_LOCK_TTL_SECONDS',
  'AGENT_LOCK_MUTEX_TIMEOUT',
  'AGENT_LOCK_WORKTREES',
  'AGENT_LOCK_CLAIM',
  'AGENT_LOCK_CLAIM_UNTIL',
  'AGENT_LOCK_CLAIM_IDLE_MINUTES',
] as const;

export const LOCK_FIELDS = [
  'id',
  'scope',
  'kind',
  'mode',
  'agent_id',
  'parent_agent_id',
  'intent',
  'tree',
  'host',
  'pid',
  'started',
  'created_at',
  'updated_at',
  'expires_at',
  'ttl_seconds',
  'status',
  'fence',
  'frozen_paths',
  'notes',
  'stale',
  'token',
  'worktree',
  'branch',
  'claim',
  'asked_by',
] as const;

/** Codes of the envelope's `warnings`: told beside an answer, never changing its status or exit code. */
export const WARNING_CODES = {
  W_REDIS_PROBED:
    'a new store became a Redis store because a server answered the probe (AGENT_LOCK_REDIS_PROBE, default 127.0.0.1:6379); told on its first answer, with how to keep a file store instead (fields: store)',
  W_OTHER_WORKTREE:
    'a path lock overlaps one held in another worktree of the same repository: a merge conflict is likely (fields: scope, worktree, branch, agent_id, intent, lock); AGENT_LOCK_WORKTREES=block makes it the answer other_worktree (exit 1), off silences it',
  W_ENFORCE_AS_ROOT:
    'acquire --enforce run as root (uid 0): root writes through read-only modes, so the frozen files stop only processes of other users',
} as const;

/**
 * The exit code of a decided answer. Only the table's ok and fail answers have one here (the others
 * take theirs from the signal or the program): a status the table does not give `command` is a
 * compile error, and if one arrives anyway (a cast) it throws rather than report success.
 */
export function exitCodeFor<C extends CommandName>(command: C, status: DecidedStatus<C>): 0 | 1 {
  const answers: CommandAnswers = ANSWERS[command];
  if (answers.ok.includes(status)) return 0;
  if (answers.fail.includes(status)) return 1;
  throw new Error(`${command} has no answer ${JSON.stringify(status)} in the contract table`);
}
