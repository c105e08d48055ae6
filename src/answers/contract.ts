/**
 * The command line's machine-readable contract: one table that `alock contract`, `--help`,
 * shell completion and the exit codes are all derived from.
 */
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
}

/** `--wait[=S]`, `-w S` and `-n`: shared by acquire and run. */
const WAIT_FLAGS: readonly FlagSpec[] = [
  {
    flags: '--wait [seconds]',
    description:
      'wait in line while held (fair: arrival order): --wait=S for at most S seconds, bare for ever',
  },
  { flags: '-w <seconds>', description: 'same as --wait=SECONDS' },
  { flags: '-n, --no-wait', description: 'answer at once when held (the default)' },
];

/** `run`'s exit code when its lease is lost while the command runs (EX_TEMPFAIL of sysexits.h). */
export const LEASE_LOST_EXIT = 75;

const TOKEN: FlagSpec = {
  flags: '--token <token>',
  description: 'prove ownership with the lease token (from another process)',
};

const WORKTREES_FLAG: FlagSpec = {
  flags: '--worktrees',
  description: 'group the locks by the worktree and branch they were taken in',
};

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: 'acquire',
    args: '<scope...>',
    summary: 'claim files, folders, globs or @resources, all or nothing',
    flags: [
      { flags: '-m, --message <intent>', description: 'what you are about to do (shown to others)' },
      { flags: '--ttl <seconds>', description: 'lease: expires unless renewed' },
      { flags: '--shared', description: 'shared lock: conflicts only with exclusive ones' },
      { flags: '--enforce', description: 'make the matched files read-only until release' },
      { flags: '--force', description: 'with --enforce: allow more than 500 files' },
      ...WAIT_FLAGS,
    ],
    ok: ['acquired', 'already_mine'],
    fail: ['held', 'parent_scope', 'interrupted', 'timeout', 'other_worktree'],
  },
  {
    name: 'run',
    args: '<scope...>',
    summary:
      "run a command under a lock (flock-style): alock run SCOPE... -- COMMAND [ARGS...]; exits with the command's code",
    flags: [
      ...WAIT_FLAGS,
      {
        flags: '-E, --conflict-exit-code <code>',
        description: 'exit code when the lock cannot be had (default 1)',
      },
      { flags: '--ttl <seconds>', description: 'lease length, renewed every third of it (default 30)' },
      { flags: '-m, --message <intent>', description: 'what the command does (shown to others)' },
      { flags: '--shared', description: 'shared lock: conflicts only with exclusive ones' },
    ],
    ok: ['ran'],
    fail: ['held', 'parent_scope', 'interrupted', 'timeout', 'lease_lost', 'other_worktree'],
  },
  {
    name: 'release',
    args: '[scope...]',
    summary: "release your (or your sub-agents') locks",
    flags: [{ flags: '--all', description: 'release every lock of yours and your children' }, TOKEN],
    ok: ['released'],
    fail: ['not_found', 'refused'],
  },
  {
    name: 'release-all',
    args: '',
    summary: 'same as release --all',
    flags: [],
    ok: ['released'],
    fail: [],
  },
  {
    name: 'renew',
    args: '<scope...>',
    summary: 'extend a lease (or touch a lock)',
    flags: [{ flags: '--ttl <seconds>', description: "new lease length (default: the lease's own)" }, TOKEN],
    ok: ['renewed'],
    fail: ['expired', 'not_found', 'refused'],
  },
  {
    name: 'check',
    args: '<scope...>',
    summary: 'would these scopes be granted?',
    flags: [{ flags: '--shared', description: 'check for a shared claim' }],
    ok: ['free', 'mine'],
    fail: ['held', 'other_worktree'],
  },
  {
    name: 'list',
    aliases: ['ls'],
    args: '',
    summary: 'every lock in the store',
    flags: [WORKTREES_FLAG],
    ok: ['listed'],
    fail: [],
  },
  {
    name: 'mine',
    args: '',
    summary: "your locks and your sub-agents'",
    flags: [WORKTREES_FLAG],
    ok: ['listed'],
    fail: [],
  },
  {
    name: 'conflicts',
    args: '',
    summary:
      "predict merge conflicts between this worktree's branch and every other worktree's branch and the base (git merge-tree; changes nothing)",
    flags: [
      { flags: '--base <branch>', description: "the base branch (default: the repository's default branch)" },
    ],
    ok: ['clear'],
    fail: ['conflicting'],
  },
  {
    name: 'note',
    args: '<scope> <text...>',
    summary: 'write a progress note into your lock',
    flags: [TOKEN],
    ok: ['noted'],
    fail: ['not_found', 'refused'],
  },
  {
    name: 'resume',
    args: '<scope>',
    summary: 'take over interrupted work (an orphan) with its notes',
    flags: [],
    ok: ['resumed'],
    fail: ['not_found', 'held'],
  },
  {
    name: 'break',
    args: '[scope...]',
    summary: 'remove any lock, whoever holds it (recorded)',
    flags: [
      { flags: '--reason <text>', description: 'why, for the record' },
      { flags: '--id <id...>', description: 'break by lock id (for unreadable records)' },
    ],
    ok: ['broken'],
    fail: ['not_found'],
  },
  {
    name: 'log',
    args: '',
    summary: "the store's history of events, newest last (--json: JSON lines)",
    flags: [
      { flags: '--follow', description: 'then print each new event as it is committed, until Ctrl-C' },
      {
        flags: '--since <when>',
        description: 'only since a duration ago (15m, 2h, 1d) or a time (ISO 8601)',
      },
      { flags: '--agent <id>', description: 'only events of this agent (or its children), or done by it' },
      { flags: '--scope <scope...>', description: 'only events of locks overlapping this scope' },
      { flags: '--limit <n>', description: 'at most the last N events (50)' },
    ],
    ok: ['listed'],
    fail: [],
  },
  {
    name: 'watch',
    args: '',
    summary: 'live board of locks, waiting lines and events (q quits); one snapshot when not a terminal',
    flags: [],
    ok: ['listed'],
    fail: [],
  },
  {
    name: 'ui',
    args: '',
    summary: 'serve a live web dashboard of the store on 127.0.0.1 (read-only unless --allow-break)',
    flags: [
      { flags: '--port <n>', description: 'port to listen on (default: any free one)' },
      { flags: '--host <address>', description: 'address to bind (default 127.0.0.1)' },
      { flags: '--allow-remote', description: 'allow a --host other machines can reach' },
      {
        flags: '--allow-break',
        description: 'offer a break button, guarded by the secret in the printed URL',
      },
      { flags: '--open', description: 'open the page in the default browser' },
    ],
    ok: [],
    fail: [],
  },
  {
    name: 'explain',
    args: '<scope-a> <scope-b>',
    summary: 'whether two scopes conflict and why: a path both match, or why none can',
    flags: [],
    ok: ['disjoint'],
    fail: ['conflict'],
  },
  {
    name: 'whoami',
    args: '',
    summary: 'your agent id, parent, holder process and store',
    flags: [],
    ok: ['identified'],
    fail: [],
  },
  {
    name: 'version',
    args: '',
    summary: 'print the version (also --version, -V)',
    flags: [],
    ok: ['version'],
    fail: [],
  },
  {
    name: 'help',
    args: '[command]',
    summary: "show the program's help, or a command's (same as COMMAND --help)",
    flags: [],
    ok: ['help'],
    fail: [],
  },
  {
    name: 'contract',
    args: '',
    summary: 'print this contract as JSON',
    flags: [],
    ok: ['contract'],
    fail: [],
  },
  {
    name: 'completion',
    args: '<shell>',
    summary: 'shell completion script (bash, zsh or fish)',
    flags: [],
    ok: ['completion'],
    fail: [],
  },
  {
    name: 'mcp',
    args: '',
    summary: 'run the MCP server for agents over stdio',
    flags: [],
    ok: ['served'],
    fail: [],
  },
  {
    name: 'skill',
    args: '<action>',
    summary: 'install (or show the path of) the agent skill that teaches the protocol',
    flags: [
      {
        flags: '--for <agent>',
        description:
          'claude (default) or codex: SKILL.md; agents-md or gemini: a section of AGENTS.md or GEMINI.md',
      },
      { flags: '--into <dir>', description: 'install into this skills folder' },
      { flags: '--force', description: 'replace a different SKILL.md' },
    ],
    ok: ['installed', 'unchanged', 'path'],
    fail: [],
  },
  {
    name: 'hooks',
    args: '<action>',
    summary:
      'install or uninstall agent or git hooks, or run a hook: <harness>-pre-tool-use for claude, codex, gemini, cursor, opencode, copilot, cline',
    flags: [
      {
        flags: '--for <agent>',
        description: 'claude, codex, gemini, cursor, opencode, copilot, cline (comma-separated), or all',
      },
      { flags: '--git', description: 'a git pre-commit guard' },
    ],
    ok: ['installed', 'unchanged', 'uninstalled', 'absent', 'allowed', 'denied'],
    fail: [],
  },
  {
    name: 'guard',
    args: '<hook>',
    summary: 'git hook runtime: refuse a commit touching paths other agents hold (pre-commit)',
    flags: [],
    ok: ['clear', 'warned'],
    fail: ['held'],
  },
  {
    name: 'doctor',
    args: '',
    summary: 'check the settings, store, backend, identity, hooks and frozen files, and say how to fix each',
    flags: [],
    ok: ['healthy'],
    fail: ['findings'],
  },
  {
    name: 'repair',
    args: '',
    summary: 'move damage in the store aside (kept, timestamped) and go on with what can be read',
    flags: [],
    ok: ['repaired', 'clean'],
    fail: [],
  },
  {
    name: 'init',
    args: '',
    summary: 'create the store and record its backend (and Redis server)',
    flags: [
      {
        flags: '--redis-url <url>',
        description: 'the Redis server of a redis store (redis:// or rediss://)',
      },
      {
        flags: '--shared <name>',
        description: "a Redis namespace shared with other repositories (default: the repository's own)",
      },
    ],
    ok: ['initialized'],
    fail: [],
  },
];

export const GLOBAL_FLAGS: readonly FlagSpec[] = [
  { flags: '--dir <path>', description: 'work as if started in this folder' },
  { flags: '--json', description: 'print exactly one JSON object' },
  { flags: '--backend <name>', description: "file or redis (must match the store's marker)" },
];

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
] as const;

/** Codes of the envelope's `warnings`: told beside an answer, never changing its status or exit code. */
export const WARNING_CODES = {
  W_OTHER_WORKTREE:
    'a path lock overlaps one held in another worktree of the same repository: a merge conflict is likely (fields: scope, worktree, branch, agent_id, intent, lock); AGENT_LOCK_WORKTREES=block makes it the answer other_worktree (exit 1), off silences it',
} as const;

export function exitCodeFor(command: string, status: string): number {
  const spec = COMMANDS.find((c) => c.name === command);
  if (spec?.fail.includes(status)) return 1;
  return 0;
}

export function contractDocument(version: string): unknown {
  return {
    schema: 'agent-lock/v1',
    version,
    usage: 'alock [--dir PATH] [--json] [--backend file|redis] COMMAND ...',
    global_flags: GLOBAL_FLAGS,
    commands: COMMANDS.map((c) => ({
      name: c.name,
      aliases: c.aliases ?? [],
      args: c.args,
      summary: c.summary,
      flags: c.flags,
      answers: { exit_0: c.ok, exit_1: c.fail },
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
