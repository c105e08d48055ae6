/**
 * `alock watch`: a live board of the store in the terminal. Locks grouped by tree and by agent
 * family, the waiting line in order, TTL countdowns, stale and orphaned locks marked, the last
 * events at the bottom. Redrawn (log-update) on every commit the store announces and once a second
 * for the countdowns; q or Ctrl-C quits. Not on a terminal: one snapshot, printed once.
 * Loaded only by this command: its terminal libraries stay out of every other command's start-up.
 */
import { createLogUpdate } from 'log-update';
import { createColors } from 'picocolors';
import type { ListOutcome } from '../core/decide.js';
import type { StoreEvent } from '../core/events.js';
import type { Lock } from '../core/lock.js';
import type { Answer } from '../answers/answer.js';
import type { StatusOf } from '../answers/contract.js';
import { age, visible } from '../answers/render.js';
import type { Cli } from './context.js';
import { interruption, signalExitCode } from '../answers/interruption.js';

type Colors = ReturnType<typeof createColors>;

/** How many of the last events the board shows. */
const EVENTS_SHOWN = 8;
const WORD: Record<string, string> = { already_mine: 'ALREADY YOURS', handed_over: 'HANDED OVER' };

export interface BoardState {
  readonly where: string;
  readonly listed: ListOutcome;
  readonly events: readonly StoreEvent[];
}

function lockLine(lock: Lock, now: number, c: Colors): string {
  const parts = [c.bold(visible(lock.scope))];
  if (lock.parent_agent_id !== null) parts.push(c.dim(`by child ${lock.agent_id}`));
  if (lock.intent) parts.push(JSON.stringify(visible(lock.intent)));
  if (lock.claim !== null && lock.claim !== undefined)
    parts.push(
      c.cyan(`CLAIM ${lock.claim.tool}, last edit ${age(now - Date.parse(lock.claim.last_edit_at))} ago`),
    );
  parts.push(`${age(now - Date.parse(lock.created_at))} ago`, `fence ${lock.fence}`);
  if (lock.mode === 'shared') parts.push('shared');
  if (lock.expires_at !== null) {
    const left = Date.parse(lock.expires_at) - now;
    const ttl = `TTL ${age(left)}`;
    parts.push(left < 10_000 ? c.red(ttl) : left < 60_000 ? c.yellow(ttl) : c.green(ttl));
  }
  if (lock.status === 'orphaned') parts.push(c.yellow('ORPHANED (holder gone: resume or break it)'));
  if (lock.stale) parts.push(c.yellow(`STALE (untouched ${age(now - Date.parse(lock.updated_at))})`));
  return parts.join('  ');
}

/** The board as lines: a pure function of what the store answered and the time. */
export function boardLines(state: BoardState, now: number, c: Colors): string[] {
  const { locks, waiting } = state.listed;
  const lines = [
    `${c.bold('alock watch')}  ${state.where}  ${locks.length} ${locks.length === 1 ? 'lock' : 'locks'}, ${waiting.length} waiting  ${new Date(now).toISOString().slice(11, 19)}  ${c.dim('q quits')}`,
  ];
  // Tree -> family (the top agent: a lock's parent, else its agent) -> locks.
  const trees = new Map<string, Map<string, Lock[]>>();
  for (const lock of locks) {
    const tree = lock.tree === null ? 'resources' : `tree ${lock.tree}`;
    const family = lock.parent_agent_id ?? lock.agent_id;
    const families = trees.get(tree) ?? new Map<string, Lock[]>();
    trees.set(tree, families);
    const list = families.get(family) ?? [];
    list.push(lock);
    families.set(family, list);
  }
  if (locks.length === 0) lines.push('', c.dim('no locks held'));
  for (const [tree, families] of [...trees].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push('', c.cyan(visible(tree)));
    for (const [family, held] of [...families].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`  ${c.bold(visible(family))}`);
      for (const lock of held) lines.push(`    ${lockLine(lock, now, c)}`);
    }
  }
  if (waiting.length > 0) {
    lines.push('', c.cyan('waiting in line, first come first served'));
    waiting.forEach((ticket, i) => {
      const who = ticket.parent_agent_id
        ? `${ticket.agent_id} (child of ${ticket.parent_agent_id})`
        : ticket.agent_id;
      const intent = ticket.intent ? `  ${JSON.stringify(visible(ticket.intent))}` : '';
      lines.push(
        `  ${i + 1}. ${visible(who)}  ${c.bold(visible(ticket.scope))}${intent}  waiting ${age(now - Date.parse(ticket.created_at))}`,
      );
    });
  }
  lines.push('', c.cyan('last events'));
  if (state.events.length === 0) lines.push(c.dim('  none yet'));
  for (const event of state.events) {
    const word = WORD[event.type] ?? event.type.toUpperCase();
    const by = event.by ? ` by ${event.by}` : '';
    const reason = event.reason ? `: ${visible(event.reason)}` : '';
    // A trespass names the held file that was changed (its scope may be a folder or a glob).
    const files =
      event.type === 'trespassed' && event.files?.length ? ` [${event.files.map(visible).join(', ')}]` : '';
    const line = `  ${new Date(event.at).toISOString().slice(11, 19)} ${word} ${visible(event.scope)} ${visible(event.agent_id)}${by}${reason}${files}`;
    lines.push(event.type === 'trespassed' ? c.red(line) : line);
  }
  return lines;
}

export async function showBoard(cli: Cli): Promise<Answer> {
  const locks = await cli.open();
  const colors = createColors(cli.style.color);
  const where = `${locks.store.kind} ${locks.store.location}`;
  const look = async (): Promise<BoardState> => ({
    where,
    listed: await locks.list(),
    events: await locks.events(EVENTS_SHOWN),
  });
  const answer = (exitCode: number, status: StatusOf<'watch'>, text: string[]): Answer => ({
    command: 'watch',
    status,
    exitCode,
    locks: [],
    conflicts: [],
    message: status,
    text,
  });
  const stdin = process.stdin;
  if (cli.io.isTTY !== true || stdin.isTTY !== true) {
    const state = await look();
    return {
      ...answer(0, 'listed', boardLines(state, Date.now(), colors)),
      locks: state.listed.locks,
      extra: { waiting: state.listed.waiting, events: state.events },
    };
  }
  const out = process.stdout;
  // A terminal that reports no size (0 rows and columns, as some pseudo-terminals do) would get
  // every line cut: draw as on a usual one instead.
  const screen = {
    write: (text: string) => out.write(text),
    get columns() {
      return out.columns || 100;
    },
    get rows() {
      return out.rows || 50;
    },
  };
  const draw = createLogUpdate(screen as unknown as NodeJS.WritableStream, { showCursor: true });
  let quitting = false;
  let quit: (how: 'q' | NodeJS.Signals) => void = () => {};
  const ended = new Promise<'q' | NodeJS.Signals>((resolve) => {
    quit = (how) => {
      quitting = true;
      resolve(how);
    };
  });
  // Keys and signals are taken before the first frame is drawn: once the board shows, Ctrl-C is a
  // byte this command reads, never a signal that also reaches the shell that started it.
  const signals = interruption(cli.io.onSignal);
  signals.signal.addEventListener('abort', () => quit(signals.received ?? 'SIGINT'), { once: true });
  const onKey = (key: Buffer) => {
    const text = key.toString('utf8');
    // In raw mode Ctrl-C arrives as a byte, not a signal.
    if (text === '\u0003') quit('SIGINT');
    else if (text === 'q' || text === 'Q') quit('q');
  };
  stdin.setRawMode(true);
  stdin.on('data', onKey);
  stdin.resume();
  let state: BoardState | null = null;
  const render = () => {
    if (state !== null && !quitting) draw(boardLines(state, Date.now(), colors).join('\n'));
  };
  let looking: Promise<void> = Promise.resolve();
  let again = false;
  let failure: unknown = null;
  // Commits come in bursts: one look at a time, and one more after it if any came meanwhile.
  const refresh = () => {
    if (again || quitting) return;
    again = true;
    looking = looking.then(async () => {
      again = false;
      try {
        state = await look();
        render();
      } catch (error) {
        failure = error;
        quit('q');
      }
    });
  };
  let unwatch: () => Promise<void> = async () => {};
  let ticker: NodeJS.Timeout | undefined;
  try {
    // A first look held up (a busy store, a slow server) must not hold up q or Ctrl-C.
    const first = look();
    first.catch(() => undefined);
    state = await Promise.race([first, ended.then(() => null)]);
    if (!quitting) {
      render();
      unwatch = await locks.store.watch(() => refresh());
      // Countdowns and ages move with the clock, not with commits: redraw what we have each second.
      ticker = setInterval(render, 1000);
    }
  } catch (error) {
    failure = error;
    quit('q');
  }
  let how: 'q' | NodeJS.Signals;
  try {
    how = await ended;
  } finally {
    clearInterval(ticker);
    stdin.off('data', onKey);
    stdin.setRawMode(false);
    stdin.pause();
    signals.dispose();
    await unwatch();
    await looking;
    draw.done();
  }
  if (failure !== null) throw failure;
  return {
    ...answer(how === 'q' ? 0 : signalExitCode(how), how === 'q' ? 'listed' : 'aborted', []),
    raw: { stdout: '' },
  };
}
