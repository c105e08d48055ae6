/**
 * Requests to a holder and their answers (`alock ask`, `alock reply`), on the hook's side. The
 * messages live in the store, on the lock records (core/decisions/ask.ts); what lives here is how a
 * hook call learns that one waits for its agent without asking the store on every call:
 *
 * - a hook call that asks the store anyway (an edit's check or claim) sees it in the same read;
 * - `ask`, `reply` and a `release` on this host leave a hint beside the trespass notices (one file
 *   per addressee in `<tmp>/agent-lock-<uid>/tell`), which the hook's one readdir already sees.
 *
 * Only then does the hook make one more decision, which takes the messages and marks them delivered
 * in one atomic step. A hook call with nothing waiting writes nothing and adds no round trip.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { quoteArg as shellQuote } from '../answers/render.js';
import type { Delivered } from '../core/decide.js';
import { openLocks } from '../locks.js';
import { keyName, prune, takeTold, trespassDir, writeWhole } from './trespass-folder.js';

type Env = Readonly<Record<string, string | undefined>>;

/** A hint older than a day is dropped: the store keeps the message itself, and the edits find it. */
const HINT_MS = 24 * 60 * 60 * 1000;

interface Hint {
  readonly agent: string;
  /** A folder of the tree whose store holds the messages. */
  readonly dir: string;
  readonly at: number;
}

/** Tells `agentId`'s hooks on this host that messages wait for it in the store of `dir`'s tree. */
export function leaveMailHint(env: Env, agentId: string, dir: string): void {
  const base = trespassDir(env, true);
  if (base === null) return;
  const tell = path.join(base, 'tell');
  // One hint per addressee and tree: asking twice leaves one file, rewritten whole.
  const name = `${keyName(agentId)}.${keyName(dir)}.mail`;
  try {
    mkdirSync(tell, { recursive: true, mode: 0o700 });
    // Hints never taken (an agent that stopped, a harness with no place for context) do not pile up.
    prune(tell, HINT_MS, Date.now());
    writeWhole(path.join(tell, name), JSON.stringify({ agent: agentId, dir, at: Date.now() } satisfies Hint));
  } catch {
    // Best effort: the message is in the store, and the agent's next edit finds it there.
  }
}

/**
 * Locks that just ended: each agent that had asked about one hears on its next tool call, on this
 * host, that the scope is free (the notice itself is in the store: core/decisions/context.ts).
 */
export function hintAskers(env: Env, ended: readonly { asked_by?: string[] }[], dir: string): void {
  const askers = new Set(ended.flatMap((lock) => lock.asked_by ?? []));
  for (const asker of askers) leaveMailHint(env, asker, dir);
}

/** The folders whose stores hold messages for `agentId`, each hint taken once. */
export function takeMailHints(env: Env, agentId: string): string[] {
  const now = Date.now();
  return takeTold<Hint>(env, agentId, '.mail', (hint) => hint.agent)
    .filter((hint) => now - hint.at <= HINT_MS && typeof hint.dir === 'string')
    .map((hint) => hint.dir);
}

/** The messages as lines the agent reads: who, about what, what, and how to answer. */
export function mailLines(delivered: readonly Delivered[], name: string): string[] {
  return delivered.map((m) => {
    const scope = shellQuote(m.scope);
    if (m.type === 'ask')
      return `agent-lock: ${m.from} asks you about ${m.scope}, which you hold: ${JSON.stringify(m.text)}. Answer with: ${name} reply ${shellQuote(m.from)} "...", or let it go when done: ${name} release ${scope}`;
    if (m.type === 'reply')
      return `agent-lock: ${m.from} replies about ${m.scope}: ${JSON.stringify(m.text)}`;
    return `agent-lock: ${m.scope}, which you asked ${m.from} about, is free now (${m.text || 'released'}); check it with: ${name} check ${scope}`;
  });
}

/** Takes the messages waiting for the agent in the stores of `dirs` (a hook's): lines to tell it. */
export async function takeMail(
  env: Env,
  dirs: readonly string[],
  agent: { agentId: string; parentAgentId: string | null },
  name: string,
): Promise<string[]> {
  const lines: string[] = [];
  for (const dir of new Set(dirs)) {
    try {
      const locks = await openLocks({
        dir,
        env,
        identity: { agentId: agent.agentId, parentAgentId: agent.parentAgentId },
      });
      try {
        lines.push(...mailLines(await locks.takeMail(), name));
      } finally {
        await locks.close().catch(() => {});
      }
    } catch {
      // A hint is best effort (its tree may be gone, its store unreachable): the messages stay in
      // the store, and the agent's next edit there reads them, or says what is wrong with it.
    }
  }
  return lines;
}
