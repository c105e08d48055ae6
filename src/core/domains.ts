/**
 * Conflict domains: a partition of scopes such that two scopes that can conflict (or cover one
 * another) always have domains where one is an ancestor of, or equal to, the other. A store that
 * versions each domain (Redis) lets decisions on unrelated domains commit without invalidating
 * each other: `src/w1.ts` and `src/w2.ts`, `@a` and `@b`.
 *
 * The tree of domains:
 *   `*`               the whole store: its parent of everything (records that cannot be read live
 *                     here, since they block every scope)
 *   `@NAME`           one resource (child of `*`: resources conflict only when equal)
 *   `/`               path scopes whose fixed part is empty (`**`, `**\/*.ts`; child of `*`)
 *   `/a`, `/a/b`, ... a path scope's fixed part (for a plain path, the path itself): `/a/b` is a
 *                     child of `/a`
 * Domains ignore the tree key: path scopes of other trees (worktrees, clones) share them, which
 * only costs speed (their decisions see each other), and keeps the worktree warnings, which read
 * other trees' locks, inside the domains they read.
 *
 * Why it holds: a glob matches only paths that start with its fixed part, and a plain path only
 * itself; two path scopes that overlap match one path, whose leading segments are both fixed
 * parts, so one fixed part is a prefix of the other. Covering implies overlapping.
 */
import type { LockRecord } from './lock.js';
import { recordScope } from './lock.js';
import { type Scope, scopeFromPattern } from './scope.js';

/** The domain of the whole store: an ancestor of every other. */
export const STORE_DOMAIN = '*';
/** The domain of path scopes with an empty fixed part. */
export const TREE_DOMAIN = '/';

export function scopeDomain(scope: Scope): string {
  if (scope.kind === 'resource') return scope.pattern;
  return scope.fixed.length === 0 ? TREE_DOMAIN : `/${scope.fixed.join('/')}`;
}

const recordDomains = new WeakMap<LockRecord, string>();

/** A record's domain: its scope's, or the whole store's for a record that could not be read. */
export function recordDomain(record: LockRecord): string {
  let domain = recordDomains.get(record);
  if (domain === undefined) {
    domain = record.unreadable === true ? STORE_DOMAIN : scopeDomain(recordScope(record));
    recordDomains.set(record, domain);
  }
  return domain;
}

/** The strict ancestors of a domain, from the store's down to its parent. */
export function ancestors(domain: string): string[] {
  if (domain === STORE_DOMAIN) return [];
  if (domain === TREE_DOMAIN || !domain.startsWith('/')) return [STORE_DOMAIN];
  const chain = [STORE_DOMAIN, TREE_DOMAIN];
  for (let at = domain.indexOf('/', 1); at !== -1; at = domain.indexOf('/', at + 1)) {
    chain.push(domain.slice(0, at));
  }
  return chain;
}

/** Is `domain` equal to `top` or below it? */
export function within(domain: string, top: string): boolean {
  if (domain === top || top === STORE_DOMAIN) return true;
  if (top === TREE_DOMAIN) return domain.startsWith('/');
  return top.startsWith('/') && domain.startsWith(top) && domain.charCodeAt(top.length) === 47;
}

/**
 * The domains a decision on these scopes reads and writes, each once and none below another of
 * them; null when one of them is the whole store's (the decision then compares everything).
 */
export function scopeDomains(scopes: readonly Scope[]): string[] | null {
  const all = [...new Set(scopes.map(scopeDomain))];
  const top = all.filter((d) => !all.some((other) => other !== d && within(d, other)));
  return top.includes(STORE_DOMAIN) || top.length === 0 ? null : top;
}

/** May a decision on `domains` change this record? Only inside their subtrees. */
export function owns(domains: readonly string[], record: LockRecord): boolean {
  const domain = recordDomain(record);
  return domains.some((top) => within(domain, top));
}

/** Answers of readKeys and writeKeys by their domains: a handful of domains recur in every decision. */
const readKeysOf = new Map<string, readonly string[]>();
const writeKeysOf = new Map<string, readonly string[]>();
/** Most entries each keeps before it starts over. */
const KEYS_KEPT = 1024;

/**
 * The version keys a store compares for a decision on `domains`: `o` plus each strict ancestor (the
 * records exactly there) and `s` plus each domain (its whole subtree). Not to be changed: the array
 * may be shared with other callers.
 */
export function readKeys(domains: readonly string[]): readonly string[] {
  // No domain holds a NUL (no path or resource name can): a safe separator. A newline is not: a
  // folder's real path may hold one.
  const memo = domains.length === 1 ? domains[0]! : domains.join('\0');
  let keys = readKeysOf.get(memo);
  if (keys === undefined) {
    const set = new Set<string>();
    for (const domain of domains) {
      for (const above of ancestors(domain)) set.add(`o${above}`);
      set.add(`s${domain}`);
    }
    keys = [...set];
    if (readKeysOf.size >= KEYS_KEPT) readKeysOf.clear();
    readKeysOf.set(memo, keys);
  }
  return keys;
}

/** The version keys a commit that changed records of `domain` moves: its own, and every subtree holding it. */
export function writeKeys(domain: string, into: Set<string>): void {
  let keys = writeKeysOf.get(domain);
  if (keys === undefined) {
    const list = [`o${domain}`, `s${domain}`];
    // Nothing reads the whole store's subtree version (such a decision compares everything).
    for (const above of ancestors(domain)) if (above !== STORE_DOMAIN) list.push(`s${above}`);
    keys = list;
    if (writeKeysOf.size >= KEYS_KEPT) writeKeysOf.clear();
    writeKeysOf.set(domain, keys);
  }
  for (const key of keys) into.add(key);
}

/** TransactOptions.domains for a decision on these targets: absent when it must compare everything. */
export function targetDomains(targets: readonly { readonly scope: Scope }[]): string[] | undefined {
  // Targets shared between calls (a store's @resource targets) keep their answer.
  if (targetDomainsOf.has(targets)) return targetDomainsOf.get(targets);
  const domains = scopeDomains(targets.map((target) => target.scope)) ?? undefined;
  if (Object.isFrozen(targets)) targetDomainsOf.set(targets, domains && (Object.freeze(domains) as string[]));
  return domains;
}
const targetDomainsOf = new WeakMap<object, string[] | undefined>();

/** TransactOptions.domains for a decision on these locks by id (a lease's): those of their scopes. */
export function lockDomains(
  locks: readonly { readonly scope: string; readonly kind: Scope['kind'] }[],
): string[] | undefined {
  return scopeDomains(locks.map((lock) => scopeFromPattern(lock.scope, lock.kind))) ?? undefined;
}

/**
 * The domains whose change messages a listener of these locks needs (Backend.watch): each lock's
 * own, uncollapsed. A commit is published on the domains of the records it changes, and a lease's
 * check reads its records by id, so a lease on `src/**` needs the commits at `/src`, not those of
 * `src/a.ts` below it (lockDomains would fold `/src/a.ts` into `/src`, whose channel does not carry it).
 */
export function listenDomains(
  locks: readonly { readonly scope: string; readonly kind: Scope['kind'] }[],
): string[] {
  return [...new Set(locks.map((lock) => scopeDomain(scopeFromPattern(lock.scope, lock.kind))))];
}
