/**
 * `alock ui` and serveDashboard(): a local web dashboard of one store, served by node:http with the
 * page built in (no CDN, works offline). The page gets the store's state (locks, waiting lines,
 * the last events) as JSON, live through Server-Sent Events pushed on each commit the store
 * announces. Read-only unless `allowBreak`: then a break, with a reason, needs the per-run secret
 * the printed URL carries (403 without). It binds 127.0.0.1 unless told; any other address needs
 * `allowRemote`. Nothing sent to the page carries a token, a token hash or a password.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import { hostname } from 'node:os';
import { AgentLockError } from '../core/errors.js';
import type { StoreEvent } from '../core/events.js';
import type { Lock } from '../core/lock.js';
import type { Locks } from '../locks.js';
import { DASHBOARD_HTML } from './page.js';

export interface DashboardOptions {
  /** 0 (default): any free port. */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Needed to bind anything but a loopback address. */
  readonly allowRemote?: boolean;
  /** Offer a break button, guarded by the secret. */
  readonly allowBreak?: boolean;
  /** The per-run secret (default: 128 random bits). */
  readonly secret?: string;
  /** How many of the last events the page gets (default 200). */
  readonly events?: number;
}

export interface Dashboard {
  /** The URL to open, with the secret in it. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/**
 * Whether a request's Host names this server: an IP address (no DNS answer can rebind a literal),
 * `localhost`, the host it was started on, and with `allowRemote` this machine's own names.
 */
export function hostAllowed(header: string | undefined, started: string, allowRemote: boolean): boolean {
  if (header === undefined) return false;
  const name = header
    .replace(/:\d+$/, '')
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  if (name === '') return false;
  if (name === 'localhost' || name === started.toLowerCase()) return true;
  if (isIP(name) !== 0) return true;
  if (!allowRemote) return false;
  const own = hostname().toLowerCase();
  return name === own || name.startsWith(`${own}.`);
}

/** A lock as the page sees it: only what a person needs, so nothing secret can slip through. */
function pageLock(lock: Lock) {
  const { token: _token, ...shown } = lock as Lock & { token?: string };
  return shown;
}

type PageLock = ReturnType<typeof pageLock>;

interface State {
  where: string;
  now: number;
  allowBreak: boolean;
  locks: PageLock[];
  waiting: PageLock[];
  events: StoreEvent[];
}

/** What a page that has `before` needs to have `after`: locks and tickets by id, the new events. */
export function changesOf(before: State, after: State) {
  const byId = (list: PageLock[]) => new Map(list.map((l) => [l.id, JSON.stringify(l)]));
  const delta = (was: PageLock[], now: PageLock[]) => {
    const old = byId(was);
    const ids = new Set(now.map((l) => l.id));
    return {
      put: now.filter((l) => old.get(l.id) !== JSON.stringify(l)),
      del: was.filter((l) => !ids.has(l.id)).map((l) => l.id),
    };
  };
  const seen = new Set(before.events.map((e) => JSON.stringify(e)));
  return {
    now: after.now,
    locks: delta(before.locks, after.locks),
    waiting: delta(before.waiting, after.waiting),
    events: after.events.filter((e) => !seen.has(JSON.stringify(e))),
    keep: after.events.length,
  };
}

export async function serveDashboard(locks: Locks, options: DashboardOptions = {}): Promise<Dashboard> {
  const host = options.host ?? '127.0.0.1';
  // The whole 127.0.0.0/8 range is this machine's loopback, not only 127.0.0.1.
  const loopback = LOOPBACK.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
  if (!loopback && !options.allowRemote) {
    throw new AgentLockError('E_USAGE', `--host ${host} would show the store to other machines`, {
      hint: 'add --allow-remote if that is meant, or leave --host out for 127.0.0.1',
    });
  }
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new AgentLockError('E_USAGE', `--port must be a whole number from 0 to 65535 (got ${port})`, {
      hint: 'for example --port 7777, or 0 for any free port',
    });
  }
  const secret = options.secret ?? randomBytes(16).toString('base64url');
  const where = `${locks.store.kind} ${locks.store.location}`;
  const state = async (): Promise<State> => {
    const listed = await locks.list();
    return {
      where,
      now: Date.now(),
      allowBreak: options.allowBreak === true,
      locks: listed.locks.map(pageLock),
      waiting: listed.waiting.map(pageLock),
      events: await locks.events(options.events ?? 200),
    };
  };
  const streams = new Set<ServerResponse>();
  /** Pages that have not had the whole state yet: they get it, the others only the changes. */
  const fresh = new Set<ServerResponse>();
  let last: State | null = null;
  let pushing = false;
  let again = false;
  // One look per burst of commits, whatever the number of pages open.
  const push = async () => {
    if (pushing) {
      again = true;
      return;
    }
    pushing = true;
    try {
      do {
        again = false;
        if (streams.size === 0) break;
        const next = await state();
        const whole = fresh.size > 0 ? `event: state\ndata: ${JSON.stringify(next)}\n\n` : '';
        // 10,000 locks are 4.6 MB of state: sent whole on every commit to every page, that was
        // 50 MB in 3 s. A commit changes a few locks, so a page that has the state gets only those.
        const diff = last === null ? null : changesOf(last, next);
        const changes = diff === null ? '' : `event: changes\ndata: ${JSON.stringify(diff)}\n\n`;
        last = next;
        for (const res of streams) {
          if (fresh.delete(res)) res.write(whole);
          else if (changes !== '') res.write(changes);
        }
      } while (again);
    } catch {
      // The store did not answer: the pages keep what they have; the next commit tries again.
    } finally {
      pushing = false;
    }
  };
  const unwatch = await locks.store.watch(() => {
    push();
  });
  const proven = (req: IncomingMessage) => {
    const given = Buffer.from(String(req.headers['x-alock-secret'] ?? ''));
    const wanted = Buffer.from(secret);
    return given.length === wanted.length && timingSafeEqual(given, wanted);
  };
  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, {
      'content-type': type,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      // The page loads nothing from elsewhere, and no other site may frame it.
      'content-security-policy':
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'",
    });
    res.end(body);
  };
  const server = createServer((req, res) => {
    // DNS rebinding: a page of another site whose name is made to resolve to this address would
    // otherwise read every lock, note, path and pid. Its requests carry its own name as Host.
    if (!hostAllowed(req.headers.host, host, options.allowRemote === true)) {
      return send(res, 421, 'text/plain', 'this dashboard answers only at the address it was started on\n');
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/')
      return send(res, 200, 'text/html; charset=utf-8', DASHBOARD_HTML);
    if (req.method === 'GET' && url.pathname === '/api/state') {
      state().then(
        (body) => send(res, 200, 'application/json', JSON.stringify(body)),
        (error: Error) => send(res, 503, 'application/json', JSON.stringify({ error: error.message })),
      );
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/stream') {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-store',
        connection: 'keep-alive',
      });
      res.write(': connected\n\n');
      streams.add(res);
      fresh.add(res);
      req.on('close', () => {
        streams.delete(res);
        fresh.delete(res);
      });
      push();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/api/break') {
      if (!options.allowBreak || !proven(req)) {
        return send(
          res,
          403,
          'application/json',
          JSON.stringify({ error: 'breaking needs --allow-break and the secret' }),
        );
      }
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
        if (body.length > 10_000) req.destroy();
      });
      req.on('end', () => {
        let asked: { id?: unknown; reason?: unknown };
        try {
          asked = JSON.parse(body) as typeof asked;
        } catch {
          return send(res, 400, 'application/json', JSON.stringify({ error: 'the body must be JSON' }));
        }
        if (typeof asked.id !== 'string' || typeof asked.reason !== 'string' || asked.reason.trim() === '') {
          return send(
            res,
            400,
            'application/json',
            JSON.stringify({ error: 'a break needs the lock id and a reason' }),
          );
        }
        locks.breakLock([], { ids: [asked.id], reason: asked.reason }).then(
          (outcome) => send(res, 200, 'application/json', JSON.stringify({ status: outcome.status })),
          (error: Error) => send(res, 400, 'application/json', JSON.stringify({ error: error.message })),
        );
      });
      return;
    }
    send(res, 404, 'text/plain', 'not found');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(
          new AgentLockError('E_USAGE', `port ${port} on ${host} is in use`, {
            hint: 'pick another with --port, or --port 0 for any free one',
          }),
        );
      } else
        reject(
          new AgentLockError('E_USAGE', `cannot listen on ${host}:${port}: ${error.message}`, {
            cause: error,
          }),
        );
    });
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}/?secret=${secret}`,
    host,
    port: bound,
    async close() {
      await unwatch();
      for (const res of streams) res.end();
      streams.clear();
      // close() waits for every connection to end: a browser's or fetch's keep-alive one would
      // hold it for seconds. Nothing is half-answered here, so they are cut at once.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
