/**
 * The Redis store's listeners of some domains (Backend.watch with domains): each hears the commits
 * that COMMIT_LUA publishes on `{PREFIX}:changed:<domain>` for the domains whose records they
 * changed (DOMAIN CHANNELS in commit-script.ts), for its own domains and for the whole store's
 * (records that cannot be read, deletes of records the committer did not know), instead of every
 * commit on `{PREFIX}:changed`. A channel is subscribed while someone listens on it and unsubscribed
 * after, so that a long-lived handle (a daemon, `alock mcp`) whose leases came and went does not go
 * on hearing their domains.
 */
import type { WatchListener } from '../backend.js';
import { STORE_DOMAIN } from '../../core/domains.js';

export class DomainChannels {
  private readonly listeners = new Map<string, Set<WatchListener>>();

  constructor(
    /** The store's channel, `{PREFIX}:changed`: a domain's is it, ':' and the domain. */
    private readonly base: string,
    private readonly subscribe: (channel: string) => Promise<void>,
    private readonly unsubscribe: (channel: string) => Promise<void>,
  ) {}

  /** How many channels someone listens on. */
  get size(): number {
    return this.listeners.size;
  }

  /** The listeners of a channel, or undefined when it is no domain's that anyone listens on. */
  of(channel: string): Set<WatchListener> | undefined {
    return this.listeners.get(channel);
  }

  /** Listens on the channels of `domains` and the whole store's; resolves to the stopper. */
  async add(listener: WatchListener, domains: readonly string[]): Promise<() => Promise<void>> {
    const channels = [...new Set([...domains, STORE_DOMAIN])].map((domain) => `${this.base}:${domain}`);
    for (const channel of channels) {
      let set = this.listeners.get(channel);
      if (!set) {
        set = new Set();
        this.listeners.set(channel, set);
      }
      set.add(listener);
    }
    let listening = true;
    const stop = async () => {
      if (!listening) return;
      listening = false;
      const emptied: string[] = [];
      for (const channel of channels) {
        const set = this.listeners.get(channel);
        if (!set) continue;
        set.delete(listener);
        if (set.size === 0) {
          this.listeners.delete(channel);
          emptied.push(channel);
        }
      }
      // Best effort: a channel left subscribed costs messages nobody is told, not correctness.
      await Promise.all(emptied.map((channel) => this.unsubscribe(channel).catch(() => undefined)));
    };
    try {
      await Promise.all(channels.map((channel) => this.subscribe(channel)));
    } catch (error) {
      await stop();
      throw error;
    }
    return stop;
  }

  clear(): void {
    this.listeners.clear();
  }
}

/**
 * The ids a published commit touched, from its first line (the changes-list entry: version,
 * previous version, commit id, then the ids), or null when it cannot be read. A handle that listens
 * on some domains only is behind the store most of the time (it hears none of the other commits),
 * so its snapshot cannot fold what it hears; the commit's own ids still tell a lease whether it
 * concerns its locks.
 */
export function touchedIds(message: string): string[] | null {
  const end = message.indexOf('\n');
  const words = (end === -1 ? message : message.slice(0, end)).split(' ');
  return words.length >= 3 ? words.slice(3) : null;
}

/** How far ahead a watcher keeps the store publishing (renewed every third of it). */
const WATCH_MS = 30_000;

/**
 * Commits publish only while the store's #watch (the store's channel) or #dwatch (the domains')
 * lies ahead (WATCH_LUA): each is pushed WATCH_MS ahead when a watch starts, unless that was done
 * lately, then every third of it while someone listens. A watch that starts after a quiet spell so
 * waits for its announcement and misses nothing.
 */
export class Announcer {
  private timer: NodeJS.Timeout | null = null;
  /** When (monotonic ms) each field was last pushed ahead. */
  private readonly done = new Map<string, number>();

  constructor(
    private readonly push: (field: string, ms: number) => Promise<void>,
    private readonly listening: (field: string) => boolean,
  ) {}

  async keep(field: '#watch' | '#dwatch'): Promise<void> {
    if (performance.now() - (this.done.get(field) ?? Number.NEGATIVE_INFINITY) > WATCH_MS / 2) {
      await this.announce(field);
    }
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      for (const each of ['#watch', '#dwatch']) {
        if (this.listening(each)) this.announce(each).catch(() => undefined);
      }
    }, WATCH_MS / 3);
    this.timer.unref();
  }

  private async announce(field: string): Promise<void> {
    const at = performance.now();
    await this.push(field, WATCH_MS);
    this.done.set(field, at);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
