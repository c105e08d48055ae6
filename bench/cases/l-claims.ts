// (l) claims on edit (issue 29): a Claude Code PreToolUse Edit hook call, spawned with the payload
//     on stdin as (h) does, against `node -e 0` given the same stdin, alternating, on the file
//     store and on Redis (the bench's redis-server, loopback):
//       1. an Edit that claims a free file (each call a new file, so every call really claims)
//                                                    target <= 1.35x file store, <= 1.8x Redis
//       2. a further Edit of a file the agent claims already (the claim's renewal not due)
//                                                    target <= 1.25x file store (Redis: information)
//          and how many of those calls wrote to the store (the file store's log, the Redis store's
//          version)                                  target 0 on the file store
//       3. 8 agents editing different files at once: 8 loops (one session id each), each starting
//          a hook call at most every 50 ms (an agent's calls never overlap: a call that takes
//          longer delays its next) on files of its own, a new file every 4th call and further
//          edits of its last files in between; the p99 of a hook call against the p99 of the same
//          loop with 1 agent making as many calls in all
//                                                    target <= 2x file store (Redis: information)
//          Beside it, for information, the same loops of `node -e 0`: on a machine with fewer
//          cores than agents the processes wait for a core whatever the hook does, and this shows
//          how much of the ratio that is.
// Settings: SETTINGS.spawnRuns and claimLoopCalls (BENCH_QUICK: 5 runs of each call and 4 calls per
// agent; else 30 and 15); targets: TARGETS.claims.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { BenchCase, BenchContext, Block, Verdict } from '../case.js';
import { atMost, info, verdict } from '../case.js';
import {
  callsThatWrote,
  editPayload,
  type LoopFigures,
  loopFigures,
  nextStart,
  planEdits,
  sessionId,
} from '../claims-plan.js';
import { repo, TARGETS } from '../settings.js';
import { median, round } from '../stats.js';

const TARGET = TARGETS.claims;
const AGENTS = 8;
const PERIOD_MS = 50;
/** A new file every 4th call of a loop; further edits of its last files in between. */
const NEW_EVERY = 4;

/** A store the hook calls go to: its environment, and a mark that changes with every write. */
interface StoreUnder {
  name: 'file' | 'redis';
  env: NodeJS.ProcessEnv;
  mark(): Promise<string>;
}

export interface CallFigures {
  runs: number;
  nodeMedianMs: number;
  hookMedianMs: number;
  nodeMinMs: number;
  hookMinMs: number;
  ratio: number;
  /** Timed calls that wrote to the store. */
  writes: number;
}

export interface StoreFigures {
  store: 'file' | 'redis';
  claim: CallFigures;
  further: CallFigures;
  one: LoopFigures;
  many: LoopFigures;
  p99Ratio: number;
}

export interface ClaimsOnEdit {
  file: StoreFigures;
  redis: StoreFigures | { ran: false; reason: string };
  node: { one: LoopFigures; many: LoopFigures; p99Ratio: number };
  pass: { file: boolean; redis: boolean | null };
}

const alock = path.join(repo, 'bin', 'alock.js');

/** The file an edit changes exists, as it does for a real Edit (the hook resolves its real path). */
function touch(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  if (!existsSync(file)) writeFileSync(file, 'a\n');
  return file;
}
const HOOK = [alock, 'hooks', 'claude-pre-tool-use'];
const NODE = ['-e', '0'];

/** Complains unless the call exited 0 and, for the hook, said nothing (an allowed edit is silent). */
function checked(argv: string[], status: number | null, stdout: string, stderr: string): void {
  if (status !== 0) throw new Error(`${argv.join(' ')} exited ${status}: ${stderr.trim()}`);
  if (argv !== NODE && stdout.trim() !== '') throw new Error(`${argv.join(' ')} answered ${stdout.trim()}`);
}

function callSync(argv: string[], input: string, cwd: string, env: NodeJS.ProcessEnv): number {
  const start = performance.now();
  const result = spawnSync(process.execPath, argv, { cwd, env, input, stdio: ['pipe', 'pipe', 'pipe'] });
  const ms = performance.now() - start;
  checked(argv, result.status, result.stdout.toString(), result.stderr.toString());
  return ms;
}

function callAsync(argv: string[], input: string, cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, argv, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (status) => {
      const ms = performance.now() - start;
      try {
        checked(argv, status, stdout, stderr);
        resolve(ms);
      } catch (error) {
        reject(error);
      }
    });
    child.stdin.end(input);
  });
}

/**
 * The hook on `files(i)` against `node -e 0` with the same payload, alternating (who goes first
 * swaps each run), after warm-up calls; each timed hook call's store marks before and after.
 */
async function againstNode(
  ctx: BenchContext,
  store: StoreUnder,
  tree: string,
  session: string,
  file: (i: number) => string,
): Promise<CallFigures> {
  const { spawnRuns: runs, spawnWarmup } = ctx.settings;
  let n = 0;
  const payload = () => editPayload(session, tree, touch(path.join(tree, file(n++))));
  for (let i = 0; i < spawnWarmup; i++) {
    const p = payload();
    callSync(NODE, p, tree, store.env);
    callSync(HOOK, p, tree, store.env);
  }
  const nodeMs: number[] = [];
  const hookMs: number[] = [];
  const marks: { before: string; after: string }[] = [];
  for (let i = 0; i < runs; i++) {
    const p = payload();
    const before = await store.mark();
    if (i % 2 === 0) nodeMs.push(callSync(NODE, p, tree, store.env));
    hookMs.push(callSync(HOOK, p, tree, store.env));
    if (i % 2 === 1) nodeMs.push(callSync(NODE, p, tree, store.env));
    marks.push({ before, after: await store.mark() });
  }
  const nodeMedianMs = round(median(nodeMs));
  const hookMedianMs = round(median(hookMs));
  return {
    runs,
    nodeMedianMs,
    hookMedianMs,
    nodeMinMs: round(Math.min(...nodeMs)),
    hookMinMs: round(Math.min(...hookMs)),
    ratio: round(hookMedianMs / nodeMedianMs),
    writes: callsThatWrote(marks),
  };
}

/**
 * `agents` loops at once, each `calls` calls of `argv` (the hook, or `node -e 0` with the same
 * payloads), starting at most every PERIOD_MS; the loops' starts are spread over one period.
 */
async function loops(
  argv: string[],
  tree: string,
  env: NodeJS.ProcessEnv,
  agents: number,
  calls: number,
): Promise<number[]> {
  const samples: number[] = [];
  const plan = planEdits(calls, NEW_EVERY);
  const t0 = performance.now();
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.all(
    Array.from({ length: agents }, async (_, agent) => {
      const session = sessionId(agent);
      const folder = path.join(tree, `agent${agent}`);
      let last = t0 + (agent * PERIOD_MS) / agents - PERIOD_MS;
      for (const edit of plan) {
        const start = nextStart(last, performance.now(), PERIOD_MS);
        await sleep(start - performance.now());
        last = performance.now();
        const payload = editPayload(session, tree, touch(path.join(folder, `f${edit.file}.ts`)));
        samples.push(await callAsync(argv, payload, tree, env));
      }
    }),
  );
  return samples;
}

/** The three parts on one store; `fresh(name)` gives a new tree with that store's environment. */
async function onStore(
  ctx: BenchContext,
  fresh: (name: string) => { tree: string; store: StoreUnder },
): Promise<Omit<StoreFigures, 'store'>> {
  const a = fresh('claim');
  const claim = await againstNode(ctx, a.store, a.tree, sessionId(90), (i) => `new/f${i}.ts`);
  const b = fresh('further');
  // The agent's claim exists before the timed calls (its first edit made it).
  callSync(
    HOOK,
    editPayload(sessionId(91), b.tree, touch(path.join(b.tree, 'mine.ts'))),
    b.tree,
    b.store.env,
  );
  const further = await againstNode(ctx, b.store, b.tree, sessionId(91), () => 'mine.ts');
  const each = ctx.settings.claimLoopCalls;
  const c = fresh('one-agent');
  const one = loopFigures(1, await loops(HOOK, c.tree, c.store.env, 1, AGENTS * each));
  const d = fresh('agents');
  const many = loopFigures(AGENTS, await loops(HOOK, d.tree, d.store.env, AGENTS, each));
  return { claim, further, one, many, p99Ratio: round(many.p99Ms / one.p99Ms) };
}

function fileStore(ctx: BenchContext, name: string): { tree: string; store: StoreUnder } {
  const { tree, store } = ctx.makeTree(`claims-file-${name}`);
  const env = ctx.cleanEnv({
    AGENT_LOCK_DIR: store,
    AGENT_LOCK_BACKEND: 'file',
    AGENT_LOCK_REDIS_PROBE: 'off',
  });
  delete env.REDIS_URL;
  // Every write of the file store appends to its log (or replaces it at compaction), and moves
  // events to events.log at compaction: either file's inode, size or mtime changes.
  const stamp = (file: string) => {
    if (!existsSync(file)) return '-';
    const s = statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  };
  const mark = async () => `${stamp(path.join(store, 'locks.log'))} ${stamp(path.join(store, 'events.log'))}`;
  return { tree, store: { name: 'file', env, mark } };
}

function redisStore(
  ctx: BenchContext,
  url: string,
  client: Redis,
  name: string,
): { tree: string; store: StoreUnder } {
  const { tree, store } = ctx.makeTree(`claims-redis-${name}`);
  const prefix = `${ctx.benchPrefix}-claims-${name}`;
  const env = ctx.cleanEnv({
    AGENT_LOCK_DIR: store,
    AGENT_LOCK_BACKEND: 'redis',
    AGENT_LOCK_REDIS_URL: url,
    AGENT_LOCK_REDIS_PREFIX: prefix,
  });
  delete env.REDIS_URL;
  // Every commit of the Redis store moves its version (commit-script.ts).
  const mark = async () => String(await client.hget(`{${prefix}}:store`, '#version'));
  return { tree, store: { name: 'redis', env, mark } };
}

const ms = (value: number) => value.toFixed(2);

function storeBlock(f: StoreFigures, verdicts: Verdict[]): Block {
  const where = f.store === 'file' ? 'file store' : 'Redis';
  return {
    kind: 'table',
    title: `(l) claims on edit, ${where}: hook calls against node -e 0 (median of ${f.claim.runs}, alternating), and ${AGENTS} agents at once`,
    header: ['call', 'hook ms', 'node -e 0 ms', 'ratio', 'calls that wrote'],
    rows: [
      [
        'Edit of a free file (claims it)',
        ms(f.claim.hookMedianMs),
        ms(f.claim.nodeMedianMs),
        f.claim.ratio.toFixed(2),
        `${f.claim.writes}/${f.claim.runs}`,
      ],
      [
        'further Edit of a claimed file',
        ms(f.further.hookMedianMs),
        ms(f.further.nodeMedianMs),
        f.further.ratio.toFixed(2),
        `${f.further.writes}/${f.further.runs}`,
      ],
      [`1 agent, ${f.one.calls} calls: p50 / p99`, `${ms(f.one.p50Ms)} / ${ms(f.one.p99Ms)}`, '', '', ''],
      [
        `${AGENTS} agents, ${f.many.calls} calls: p50 / p99`,
        `${ms(f.many.p50Ms)} / ${ms(f.many.p99Ms)}`,
        '',
        '',
        '',
      ],
    ],
    verdicts,
  };
}

export const claimsOnEdit: BenchCase<ClaimsOnEdit> = {
  id: 'l',
  key: 'claimsOnEdit',
  title: 'claims on edit: the hook call that claims, a further edit, 8 agents at once',
  target: `claim <= ${TARGET.claimFileMax}x (Redis ${TARGET.claimRedisMax}x), further edit <= ${TARGET.furtherFileMax}x and no write, ${AGENTS}-agent p99 <= ${TARGET.agentsP99Max}x the 1-agent p99`,
  async run(ctx) {
    const file = { store: 'file' as const, ...(await onStore(ctx, (name) => fileStore(ctx, name))) };
    const fileVerdicts = [
      atMost(
        'file store: ratio hook / node, Edit that claims a free file (median)',
        file.claim.ratio,
        TARGET.claimFileMax,
      ),
      atMost(
        'file store: ratio hook / node, further Edit of a claimed file (median)',
        file.further.ratio,
        TARGET.furtherFileMax,
      ),
      atMost(
        'file store: store writes of the further Edits',
        file.further.writes,
        TARGET.furtherWritesMax,
        '',
      ),
      atMost(
        `file store: p99 of a hook call, ${AGENTS} agents / 1 agent`,
        file.p99Ratio,
        TARGET.agentsP99Max,
      ),
    ];
    // The floor of the loops: the same loops of `node -e 0`, which touch no store.
    const nodeTree = ctx.makeTree('claims-node').tree;
    const each = ctx.settings.claimLoopCalls;
    const nodeEnv = ctx.cleanEnv();
    const nodeOne = loopFigures(1, await loops(NODE, nodeTree, nodeEnv, 1, AGENTS * each));
    const nodeMany = loopFigures(AGENTS, await loops(NODE, nodeTree, nodeEnv, AGENTS, each));
    const node = { one: nodeOne, many: nodeMany, p99Ratio: round(nodeMany.p99Ms / nodeOne.p99Ms) };
    const nodeBlock: Block = {
      kind: 'table',
      title: `(l) the same loops of node -e 0 (no store): how much of the ${AGENTS}-agent ratio is processes waiting for a core`,
      header: ['loop', 'p50 ms', 'p99 ms'],
      rows: [
        [`1 agent, ${nodeOne.calls} calls`, ms(nodeOne.p50Ms), ms(nodeOne.p99Ms)],
        [`${AGENTS} agents, ${nodeMany.calls} calls`, ms(nodeMany.p50Ms), ms(nodeMany.p99Ms)],
      ],
      verdicts: [
        info(`p99 of node -e 0, ${AGENTS} agents / 1 agent`, node.p99Ratio),
        info(
          `the file store's ${AGENTS}-agent p99 ratio over node -e 0's`,
          round(file.p99Ratio / node.p99Ratio),
        ),
      ],
    };
    const blocks: Block[] = [storeBlock(file, fileVerdicts), nodeBlock];
    const passFile = fileVerdicts.every((v) => v.pass === true);

    const { server, reason, announce } = await ctx.redis();
    let redis: ClaimsOnEdit['redis'];
    let passRedis: boolean | null = null;
    if (server === null) {
      redis = { ran: false, reason };
      blocks.push({ kind: 'notRun', title: '(l) claims on edit, Redis', reason });
    } else {
      const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      await client.connect();
      try {
        const figures = await onStore(ctx, (name) => redisStore(ctx, server.url, client, name));
        const r: StoreFigures = { store: 'redis', ...figures };
        redis = r;
        const redisVerdicts = [
          atMost(
            'Redis: ratio hook / node, Edit that claims a free file (median)',
            r.claim.ratio,
            TARGET.claimRedisMax,
          ),
          info('Redis: ratio hook / node, further Edit of a claimed file (median)', r.further.ratio),
          { ...info('Redis: store writes of the further Edits', r.further.writes), unit: '' },
          info(`Redis: p99 of a hook call, ${AGENTS} agents / 1 agent`, r.p99Ratio),
        ];
        passRedis = redisVerdicts.every((v) => v.pass !== false);
        blocks.push(...announce, storeBlock(r, redisVerdicts));
      } finally {
        client.disconnect();
      }
    }
    const words = {
      claimsFile: verdict(passFile),
      claimsRedis: passRedis === null ? 'NOT RUN' : verdict(passRedis),
    };
    return {
      data: { file, redis, node, pass: { file: passFile, redis: passRedis } },
      blocks,
      summary: words,
      summaryText: `file ${words.claimsFile} Redis ${words.claimsRedis}`,
    };
  },
};
