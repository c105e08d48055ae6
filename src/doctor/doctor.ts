/**
 * `alock doctor`: checks what goes wrong in practice (settings, the store on disk, its backend, who
 * you are, hooks, freezes left behind) and says how to fix each. It opens the store only when one is
 * there, so it never creates one; what it reads goes through the store's own answer (`list`), so it
 * sees a store exactly as every other command does. Exit 0 when nothing is a problem, 1 otherwise.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { RedisStore } from '../backends/redis/redis-store.js';
import type { CliContext } from '../answers/cli-context.js';
import { readConfig } from '../core/config.js';
import { AgentLockError, asAgentLockError } from '../core/errors.js';
import type { Identity } from '../core/identity.js';
import type { Lock } from '../core/lock.js';
import { enforceAsRootWarning } from '../host/freeze.js';
import { findTree, storeDirFor } from '../host/tree.js';
import { backendOf } from '../store/store.js';
import { serverFindings } from './backend-checks.js';
import { type Area, type Finding, note, ok, problem } from './finding.js';
import { freezeFindings, gitHooksDir, HOOK_CHECKS, identityFindings } from './host-checks.js';
import { lockFindings, storeOnDisk } from './store-checks.js';

const BACKEND_ERRORS = new Set(['E_BACKEND_UNAVAILABLE', 'E_BACKEND_MISMATCH']);

function failure(area: Area, code: string, error: unknown, fallback: string): Finding {
  const e = asAgentLockError(error);
  return problem(area, code, e.message, e.hint ?? fallback);
}

/** Every check's finding, and where the store is (the command turns them into its answer). */
export async function diagnose(cli: CliContext): Promise<{ found: Finding[]; where: string }> {
  const env = cli.io.env;
  const given = cli.globals().dir;
  const start = path.resolve(cli.io.cwd, given ?? '.');
  let root: string;
  let storeDir: string;
  try {
    if (!statSync(start).isDirectory()) throw new Error('not a folder');
    const tree = findTree(start);
    root = tree.root;
    storeDir = storeDirFor(tree, env);
  } catch (error) {
    // Bad input, not a finding: there is no checkout to examine.
    throw new AgentLockError('E_USAGE', `${given ?? start} is not an existing folder`, {
      cause: error,
      hint: 'run it inside the tree, or pass --dir',
    });
  }
  const found: Finding[] = [];

  let settingsOk = true;
  try {
    readConfig(env);
    const hooksBad = HOOK_SETTINGS.some(([name, allowed]) => {
      const value = env[name]?.trim();
      return Boolean(value) && !allowed.includes(value!);
    });
    if (!hooksBad) found.push(ok('settings', 'settings', 'every AGENT_LOCK_* setting is valid'));
  } catch (error) {
    settingsOk = false;
    found.push(failure('settings', 'settings_invalid', error, 'fix or unset it'));
  }

  // Settings the hooks and the git guard read (not readConfig): a bad one makes every hook refuse.
  for (const [name, allowed] of HOOK_SETTINGS) {
    const value = env[name]?.trim();
    if (value && !allowed.includes(value)) {
      found.push(
        problem(
          'settings',
          'settings_invalid',
          `${name} must be ${allowed.join(' or ')} (got ${JSON.stringify(value)})`,
          'fix or unset it',
        ),
      );
    }
  }

  let identity: Identity | null = null;
  try {
    identity = cli.identity();
    found.push(...identityFindings(identity));
  } catch (error) {
    found.push(failure('identity', 'identity_invalid', error, 'fix or unset it'));
  }

  const disk = storeOnDisk(storeDir, typeof process.getuid === 'function' ? process.getuid() : null);
  found.push(...disk.findings);

  // The store's own answer: only when there is a store (opening would create one) and the settings
  // and identity it needs are sound (opening would fail on them again, saying the same thing).
  let locks: Lock[] | null = disk.present ? null : [];
  let where = `store ${storeDir}`;
  if (disk.present && !disk.damaged && settingsOk && identity !== null) {
    try {
      const store = await cli.open();
      where = `${store.store.kind} store ${store.store.location}`;
      const listed = await store.list();
      locks = listed.locks;
      found.push(...lockFindings(listed.locks, cli.name));
      if (store.store.kind === 'redis') {
        const redis = backendOf(store.store) as RedisStore;
        found.push(ok('backend', 'redis', `redis store ${redis.location}, key prefix {${redis.prefix}}`));
        found.push(...serverFindings(await redis.serverFacts(), redis.location));
        // A key of the layout of another type fails decisions that touch it while `list` reads on.
        for (const wrong of await redis.layoutDamage()) {
          found.push(problem('store', 'redis_key_type', wrong, `${cli.name} repair moves it aside, kept`));
        }
      } else {
        found.push(
          ok('backend', 'file', 'file store: agents on this host share it (Redis for several hosts)'),
        );
      }
    } catch (error) {
      const code = asAgentLockError(error).code;
      found.push(
        BACKEND_ERRORS.has(code)
          ? failure('backend', 'backend_unavailable', error, 'check the server and AGENT_LOCK_REDIS_URL')
          : failure('store', 'store_unreadable', error, `${cli.name} list says the same; restore the store`),
      );
    }
  }

  const gitHooks = gitHooksDir(root, env);
  for (const hook of HOOK_CHECKS) {
    const finding = hook.check({ root, gitHooks, env, name: cli.name });
    if (finding !== null) found.push(...[finding].flat());
  }
  found.push(...freezeFindings(root, gitHooks !== null, locks, cli.name));
  const asRoot = enforceAsRootWarning();
  if (asRoot !== null)
    found.push(
      note(
        'freezes',
        'enforce_as_root',
        'running as root (uid 0): root writes through the read-only modes acquire --enforce sets (W_ENFORCE_AS_ROOT)',
        'run agents as an ordinary user for --enforce to hold',
      ),
    );

  return { found, where };
}

/** The hooks' and the git guard's own settings, and the values each takes. */
const HOOK_SETTINGS: readonly (readonly [string, readonly string[]])[] = [
  ['AGENT_LOCK_GUARD', ['refuse', 'warn']],
  ['AGENT_LOCK_HOOK_ON_ERROR', ['allow', 'deny']],
  ['AGENT_LOCK_HOOK_SHELL_UNPARSED', ['allow', 'deny']],
];
