/**
 * `alock log`: the store's history (core/events), newest last, as lines for people or JSON lines,
 * and with --follow every new event as its commit lands, woken by the store's own notifications
 * (fs.watch on the file store, pub/sub on Redis), until a signal ends it.
 */
import { AgentLockError } from '../../core/errors.js';
import { EVENTS_KEPT, type StoreEvent } from '../../core/events.js';
import type { EventQuery } from '../../locks.js';
import type { Answer } from '../../answers/answer.js';
import { paint, visible } from '../../answers/render.js';
import type { Cli } from '../context.js';
import { interruption, signalExitCode } from '../../answers/interruption.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';

const FLAGS = [
  { flags: '--follow', description: 'then print each new event as it is committed, until Ctrl-C' },
  {
    flags: '--since <when>',
    description: 'only since a duration ago (15m, 2h, 1d) or a time (ISO 8601)',
  },
  { flags: '--agent <id>', description: 'only events of this agent (or its children), or done by it' },
  { flags: '--scope <scope...>', description: 'only events of locks overlapping this scope' },
  { flags: '--limit <n>', description: 'at most the last N events (50)' },
] as const satisfies readonly FlagSpec[];

/** The schema every JSON line of `log --json` names. */
export const EVENT_SCHEMA = 'agent-lock/event/v1';

const UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * --since: a duration back from now (`90s`, `15m`, `1h30m`, `2d`) or a time (`2026-05-01`,
 * `2026-05-01T12:00:00Z`, with or without an offset). Null when it is neither.
 */
export function parseSince(text: string, now: number): number | null {
  const trimmed = text.trim();
  if (/^(\d+(\.\d+)?(ms|s|m|h|d|w))+$/.test(trimmed)) {
    let ms = 0;
    for (const [, amount, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)) {
      ms += Number(amount) * UNITS[unit!]!;
    }
    return now - ms;
  }
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(trimmed))
    return null;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : at;
}

const WORD: Record<string, string> = { already_mine: 'ALREADY YOURS', handed_over: 'HANDED OVER' };
const GOOD = new Set(['acquired', 'already_mine', 'handed_over', 'renewed', 'resumed', 'noted', 'thawed']);
const BAD = new Set(['broken', 'expired', 'reaped', 'orphaned', 'timeout', 'trespassed']);

/** One event as a line: time, what, scope, whose, and the rest that was recorded. */
export function eventLine(cli: Cli, event: StoreEvent, treeKey: string | null): string {
  const word = WORD[event.type] ?? event.type.toUpperCase();
  const color = GOOD.has(event.type) ? 'green' : BAD.has(event.type) ? 'red' : 'yellow';
  const parts = [
    new Date(event.at).toISOString(),
    paint(cli.style, color, word),
    visible(event.scope),
    event.parent_agent_id ? `${event.agent_id} (child of ${event.parent_agent_id})` : event.agent_id,
  ];
  if (event.by) parts.push(`by ${event.by}`);
  if (event.tree !== null && event.tree !== treeKey) parts.push(`in ${event.tree}`);
  if (event.mode === 'shared') parts.push('shared');
  if (event.fence !== null) parts.push(`fence ${event.fence}`);
  if (event.intent) parts.push(`"${visible(event.intent)}"`);
  let line = parts.join(' ');
  if (event.reason) line += `: ${visible(event.reason)}`;
  if (event.files && event.files.length > 0) line += ` [${event.files.map(visible).join(', ')}]`;
  return line;
}

function jsonLine(event: StoreEvent): string {
  return JSON.stringify({ schema: EVENT_SCHEMA, ...event });
}

async function showLog(cli: Cli, o: OptionsOf<typeof FLAGS>): Promise<Answer> {
  const query: { -readonly [K in keyof EventQuery]: EventQuery[K] } = {};
  if (o.since !== undefined) {
    const since = parseSince(o.since, Date.now());
    if (since === null) {
      throw new AgentLockError(
        'E_USAGE',
        `--since ${JSON.stringify(o.since)} is neither a duration nor a time`,
        {
          hint: 'pass a duration such as 90s, 15m, 2h or 1d, or a time such as 2026-05-01T12:00:00Z',
        },
      );
    }
    query.since = since;
  }
  let limit = 50;
  if (o.limit !== undefined) {
    limit = Number(o.limit);
    if (!/^\d+$/.test(o.limit) || limit < 1 || limit > 2 * EVENTS_KEPT) {
      throw new AgentLockError('E_USAGE', `--limit must be a whole number from 1 to ${2 * EVENTS_KEPT}`, {
        hint: 'for example --limit 200',
      });
    }
  }
  if (o.agent !== undefined) query.agent = o.agent;
  if (o.scope !== undefined && o.scope.length > 0) query.scopes = o.scope;
  const json = cli.globals().json === true;
  const locks = await cli.open();
  const matches = locks.eventFilter(query);
  const treeKey = locks.tree.key;
  const show = (event: StoreEvent) => (json ? jsonLine(event) : eventLine(cli, event, treeKey));
  // Following: new events are those after the newest one now. Taken before the history is read, so
  // that nothing committed in between is missed (what the history shows too is not printed twice).
  const cursor = o.follow ? (await locks.store.events(1)).at(-1)?.id : undefined;
  // With --since every kept event may qualify; without, the last `limit` that match.
  const history = await locks.events({
    ...query,
    limit: o.since !== undefined && o.limit === undefined ? 2 * EVENTS_KEPT : limit,
  });
  if (!o.follow) {
    const text = json
      ? history.map(jsonLine)
      : [
          cli.head('listed', `${history.length} ${history.length === 1 ? 'event' : 'events'}, newest last`),
          ...history.map((event) => `  ${show(event)}`),
        ];
    return {
      command: 'log',
      status: 'listed',
      exitCode: 0,
      locks: [],
      conflicts: [],
      message: `${history.length} events`,
      text,
      extra: { events: history },
      ...(json ? { raw: { stdout: text.map((line) => `${line}\n`).join('') } } : {}),
    };
  }
  return follow(cli, history, cursor, matches, show);
}

/**
 * Prints the history, then every new event: each notification of the store reads what came after
 * the last event seen. Ends on SIGINT, SIGTERM or SIGHUP with 128 + the signal's number.
 */
async function follow(
  cli: Cli,
  history: readonly StoreEvent[],
  from: string | undefined,
  matches: (event: StoreEvent) => boolean,
  show: (event: StoreEvent) => string,
): Promise<Answer> {
  const locks = await cli.open();
  const backend = locks.store;
  const seen = new Set<string>();
  for (const event of history) {
    if (event.id !== undefined) seen.add(event.id);
    cli.io.stdout(`${show(event)}\n`);
  }
  let cursor = from;
  const stopped = interruption(cli.io.onSignal);
  let pulling: Promise<void> = Promise.resolve();
  let failure: unknown = null;
  const pull = () => {
    pulling = pulling.then(async () => {
      try {
        const fresh = await backend.events({ limit: 2 * EVENTS_KEPT, after: cursor });
        for (const event of fresh) {
          if (event.id !== undefined) {
            cursor = event.id;
            if (seen.has(event.id)) continue;
          }
          if (matches(event)) cli.io.stdout(`${show(event)}\n`);
        }
        // Only the history's ids can come again: forget them once past.
        seen.clear();
      } catch (error) {
        failure = error;
        stopped.dispose();
        wake();
      }
    });
  };
  let wake = () => {};
  const ended = new Promise<void>((resolve) => {
    wake = resolve;
    stopped.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const unwatch = await backend.watch(() => pull());
  // The file store's watch holds no reference on the event loop (it must not keep a library
  // user's process alive): following does, until a signal ends it. It polls nothing.
  const alive = setInterval(() => {}, 1 << 30);
  // Anything committed between the history and the watch.
  pull();
  try {
    await ended;
  } finally {
    clearInterval(alive);
    await unwatch();
    stopped.dispose();
  }
  await pulling;
  if (failure !== null) throw failure;
  const signal = stopped.received ?? 'SIGINT';
  return {
    command: 'log',
    status: 'aborted',
    exitCode: signalExitCode(signal),
    locks: [],
    conflicts: [],
    message: `followed until ${signal}`,
    text: [],
    raw: { stdout: '' },
  };
}

export const logCommand = defineCommand({
  name: 'log',
  args: '',
  summary: "the store's history of events, newest last (--json: JSON lines)",
  flags: FLAGS,
  run: (cli, o) => showLog(cli, o),
});
