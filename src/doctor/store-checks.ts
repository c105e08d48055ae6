/**
 * The store as it lies on disk (folder, marker, log), looked at without opening it: a doctor must
 * not create, repair or take over anything it examines.
 */
import { accessSync, constants, lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { type Marker, readMarker } from '../backends/open-backend.js';
import { isAgentLockError } from '../core/errors.js';
import type { Lock } from '../core/lock.js';
import { parseRedisUrl } from '../core/redis-url.js';
import { type Finding, note, ok, problem, some } from './finding.js';

/** Past this a log is not what compaction leaves behind: every process reads it whole on open. */
export const LARGE_FILE_BYTES = 16 << 20;

function lstatOrNull(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

function size(bytes: number): string {
  return bytes < 1024
    ? `${bytes} B`
    : bytes < 1 << 20
      ? `${(bytes / 1024).toFixed(1)} kB`
      : `${(bytes / (1 << 20)).toFixed(1)} MB`;
}

export interface StoreOnDisk {
  readonly findings: Finding[];
  /** The folder is there and has a marker or a log: there is a store to open. */
  readonly present: boolean;
  /** Opening it would only fail again on what is already reported (an unreadable marker, say). */
  readonly damaged: boolean;
  readonly marker: Marker | null;
}

export function storeOnDisk(dir: string, uid: number | null): StoreOnDisk {
  const found: Finding[] = [];
  const stat = lstatOrNull(dir);
  if (stat === null) {
    found.push(note('store', 'store_missing', `no store yet at ${dir}: the first command creates it`));
    return { findings: found, present: false, damaged: false, marker: null };
  }
  const unsafe = (why: string) =>
    problem(
      'store',
      'store_unsafe',
      `${dir} ${why}: agent-lock refuses to use it`,
      'remove it, or point AGENT_LOCK_DIR at a private folder',
    );
  if (stat.isSymbolicLink()) found.push(unsafe('is a symlink, not a store folder'));
  else if (!stat.isDirectory()) found.push(unsafe('is not a folder'));
  else if (uid !== null && stat.uid !== uid) found.push(unsafe(`belongs to another user (uid ${stat.uid})`));
  if (found.length > 0) return { findings: found, present: false, damaged: false, marker: null };

  try {
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
    const mode = (stat.mode & 0o777).toString(8);
    found.push(
      (stat.mode & 0o077) === 0
        ? ok('store', 'store_permissions', `store ${dir} (mode ${mode})`)
        : note(
            'store',
            'store_permissions',
            `store ${dir} is open to other users (mode ${mode}); the next command makes it 0700`,
          ),
    );
  } catch {
    found.push(
      problem(
        'store',
        'store_permissions',
        `cannot read and write the store ${dir}`,
        `chmod 700 ${dir} (as its owner)`,
      ),
    );
    return { findings: found, present: false, damaged: false, marker: null };
  }

  let marker: Marker | null = null;
  const markerFile = path.join(dir, 'backend.json');
  try {
    marker = readMarker(dir);
  } catch (error) {
    const hint = isAgentLockError(error) && error.hint ? error.hint : 'restore it';
    found.push(problem('store', 'store_marker_unreadable', `the marker ${markerFile} cannot be read`, hint));
  }
  const log = lstatOrNull(path.join(dir, 'locks.log'));
  if (marker !== null) {
    const where =
      marker.backend === 'redis' && marker.redis
        ? `redis at ${parseRedisUrl(marker.redis.url).display}, prefix ${marker.redis.prefix}`
        : 'file';
    found.push(ok('store', 'store_marker', `marker: ${where} backend, since ${marker.created_at}`));
    const markerStat = lstatOrNull(markerFile);
    const secret = marker.redis !== undefined && parseRedisUrl(marker.redis.url).password !== undefined;
    if (secret && markerStat !== null && (markerStat.mode & 0o077) !== 0) {
      found.push(
        problem(
          'store',
          'store_marker_exposed',
          `the marker ${markerFile} holds the Redis password and other users can read it`,
          `chmod 600 ${markerFile}`,
        ),
      );
    }
  } else if (found.every((f) => f.code !== 'store_marker_unreadable')) {
    found.push(
      note(
        'store',
        'store_marker_missing',
        log === null
          ? 'no marker yet: the first command records the backend'
          : 'no marker: a file store from before markers',
      ),
    );
  }

  if (log !== null && (marker === null || marker.backend === 'file')) {
    if (!log.isFile()) {
      found.push(
        problem(
          'store',
          'store_log_unsafe',
          `${path.join(dir, 'locks.log')} is not a regular file`,
          'move it aside; the store is then empty',
        ),
      );
    } else {
      try {
        accessSync(path.join(dir, 'locks.log'), constants.R_OK | constants.W_OK);
        found.push(
          log.size > LARGE_FILE_BYTES
            ? problem(
                'store',
                'store_log_large',
                `locks.log is ${size(log.size)}: every command reads it whole`,
                'list and release (or break) locks nobody needs; the log is compacted as locks go',
              )
            : ok('store', 'store_log', `locks.log ${size(log.size)}`),
        );
      } catch {
        found.push(
          problem(
            'store',
            'store_log_unreadable',
            `cannot read and write ${path.join(dir, 'locks.log')}`,
            `chmod 600 ${path.join(dir, 'locks.log')} (as its owner)`,
          ),
        );
      }
    }
  }
  const events = lstatOrNull(path.join(dir, 'events.log'));
  if (events !== null && events.size > LARGE_FILE_BYTES) {
    found.push(
      note(
        'store',
        'store_events_large',
        `events.log is ${size(events.size)}`,
        'move it aside if its history is not needed',
      ),
    );
  }
  return {
    findings: found,
    present: marker !== null || log !== null || found.some((f) => f.code === 'store_marker_unreadable'),
    damaged: found.some((f) => f.level === 'problem'),
    marker,
  };
}

/** What the store's own answer says about its locks: unreadable records, stale and orphaned ones. */
export function lockFindings(locks: readonly Lock[], name: string): Finding[] {
  const found: Finding[] = [];
  const unreadable = locks.filter((l) => l.agent_id === '<unknown>');
  if (unreadable.length > 0) {
    found.push(
      problem(
        'store',
        'store_unreadable_records',
        `${unreadable.length} unreadable ${unreadable.length === 1 ? 'record blocks' : 'records block'} every scope (ids ${some(unreadable.map((l) => l.id))})`,
        `${name} break --id ID, once you know nobody holds it`,
      ),
    );
  }
  const readable = locks.filter((l) => l.agent_id !== '<unknown>');
  found.push(
    ok('store', 'store_locks', `${readable.length} ${readable.length === 1 ? 'lock' : 'locks'} readable`),
  );
  const stale = readable.filter((l) => l.stale);
  if (stale.length > 0)
    found.push(
      note(
        'store',
        'store_stale',
        `${stale.length} stale (untouched for long): ${some(stale.map((l) => `${l.scope} by ${l.agent_id}`))}`,
        `ask their holders, or ${name} break SCOPE`,
      ),
    );
  const orphans = readable.filter((l) => l.status === 'orphaned');
  if (orphans.length > 0)
    found.push(
      note(
        'store',
        'store_orphans',
        `${orphans.length} interrupted (orphaned): ${some(orphans.map((l) => l.scope))}`,
        `${name} resume SCOPE, or ${name} break SCOPE`,
      ),
    );
  return found;
}
