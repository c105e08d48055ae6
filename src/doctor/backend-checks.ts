/**
 * The Redis server behind a store, judged from what it says about itself: pure, so that each
 * threshold is tested without a server that misbehaves on purpose.
 */
import { type Finding, note, ok, problem } from './finding.js';

export interface ServerFacts {
  readonly version: string | null;
  readonly serverMs: number;
  readonly localMs: number;
  readonly maxmemoryPolicy: string | null;
}

/** Leases lapse by the server's clock; ages of holders on other hosts are judged across clocks. */
export const MAX_SKEW_MS = 2000;

function atLeast(version: string, major: number, minor: number): boolean {
  const [a = 0, b = 0] = version.split('.').map(Number);
  return a > major || (a === major && b >= minor);
}

export function serverFindings(facts: ServerFacts, display: string): Finding[] {
  const found: Finding[] = [];
  if (facts.version === null) {
    found.push(note('backend', 'redis_version_unknown', `${display} did not say its version (INFO server)`));
  } else if (!atLeast(facts.version, 6, 2)) {
    found.push(
      problem(
        'backend',
        'redis_version',
        `${display} runs Redis ${facts.version}; agent-lock needs 6.2 or newer`,
        'upgrade the server (or use Valkey or KeyDB), or use the file store on a single host',
      ),
    );
  } else found.push(ok('backend', 'redis_version', `${display} answers, Redis ${facts.version}`));

  const skew = facts.serverMs - facts.localMs;
  const seconds = (Math.abs(skew) / 1000).toFixed(1);
  if (Math.abs(skew) > MAX_SKEW_MS) {
    found.push(
      problem(
        'backend',
        'clock_skew',
        `this host's clock is ${seconds}s ${skew > 0 ? 'behind' : 'ahead of'} the server's: leases lapse by the server's clock, while holders on other hosts are judged by age`,
        'synchronise the clocks (NTP: timedatectl set-ntp true, or chrony) on this host and the server',
      ),
    );
  } else found.push(ok('backend', 'clock_skew', `clock within ${seconds}s of the server's`));

  if (facts.maxmemoryPolicy === null) {
    found.push(
      note(
        'backend',
        'maxmemory_policy_unknown',
        'the server would not say its maxmemory-policy (CONFIG GET refused)',
        'make sure it is noeviction: an evicted key loses locks and fences',
      ),
    );
  } else if (facts.maxmemoryPolicy !== 'noeviction') {
    found.push(
      problem(
        'backend',
        'redis_eviction',
        `maxmemory-policy is ${facts.maxmemoryPolicy}: under memory pressure the server may evict the store's keys, and with them locks and the fence counter`,
        'CONFIG SET maxmemory-policy noeviction (and set it in redis.conf), or give the store a server of its own',
      ),
    );
  } else found.push(ok('backend', 'maxmemory_policy', 'maxmemory-policy noeviction: no key is evicted'));
  return found;
}
