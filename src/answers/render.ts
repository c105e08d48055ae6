/** The words: how each outcome reads for people and agents. Nothing here decides anything. */
import { type Lock, UNKNOWN_HOLDER } from '../core/lock.js';

/** Each status as the first word of a text answer (JSON keeps the status itself). */
export const STATUS_WORD: Record<string, string> = {
  acquired: 'ACQUIRED',
  already_mine: 'ALREADY YOURS',
  held: 'HELD',
  parent_scope: 'REFUSED',
  interrupted: 'INTERRUPTED WORK',
  released: 'RELEASED',
  not_found: 'NOT LOCKED',
  refused: 'REFUSED',
  renewed: 'RENEWED',
  expired: 'EXPIRED',
  free: 'FREE',
  mine: 'YOURS',
  listed: 'LISTED',
  noted: 'NOTED',
  resumed: 'RESUMED',
  broken: 'BROKEN',
  timeout: 'TIMEOUT',
  aborted: 'ABORTED',
  lease_lost: 'LEASE LOST',
  other_worktree: 'OTHER WORKTREE',
  asked: 'ASKED',
  replied: 'REPLIED',
};

export interface Style {
  readonly color: boolean;
}

const codes = { green: 32, red: 31, yellow: 33, cyan: 36, dim: 2, bold: 1 } as const;
export function paint(style: Style, color: keyof typeof codes, text: string): string {
  return style.color ? `\u001b[${codes[color]}m${text}\u001b[0m` : text;
}

export function quoteArg(text: string): string {
  return /^[A-Za-z0-9@%+=:,./_-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  return `${Math.floor(h / 24)}d`;
}

/** `by codex-1 (child of claude-2) · "refactor login" · 3m ago · fence 12 · 25s left`. */
export function describeHolder(lock: Lock, now: number, style: Style): string {
  if (lock.agent_id === UNKNOWN_HOLDER) {
    // Nothing in it can be read: no holder, age or intent to show, only the id that break takes.
    return [
      `by ${UNKNOWN_HOLDER}`,
      paint(style, 'yellow', `UNREADABLE record, id ${lock.id}`),
      'it blocks every scope until the store is repaired or the record broken by id',
    ].join(' · ');
  }
  const parts: string[] = [];
  const who = lock.parent_agent_id ? `${lock.agent_id} (child of ${lock.parent_agent_id})` : lock.agent_id;
  parts.push(`by ${who}`);
  if (lock.intent) parts.push(JSON.stringify(lock.intent));
  if (lock.status === 'waiting') {
    // A ticket, not a lock: someone queued before you (acquire --wait).
    parts.push(paint(style, 'cyan', `waiting in line for ${age(now - Date.parse(lock.created_at))}`));
    if (lock.mode === 'shared') parts.push('shared');
    return parts.join(' · ');
  }
  // A claim: taken by the agent's hook as it edited, not on purpose; the tool and the last edit.
  if (lock.claim !== null && lock.claim !== undefined)
    parts.push(
      paint(
        style,
        'cyan',
        `CLAIM by ${lock.claim.tool}, last edit ${age(now - Date.parse(lock.claim.last_edit_at))} ago`,
      ),
    );
  parts.push(`${age(now - Date.parse(lock.created_at))} ago`);
  parts.push(`fence ${lock.fence}`);
  if (lock.expires_at !== null) parts.push(`${age(Date.parse(lock.expires_at) - now)} left`);
  else parts.push('no TTL');
  if (lock.mode === 'shared') parts.push('shared');
  if (lock.status === 'orphaned')
    parts.push(paint(style, 'yellow', 'orphaned (holder gone or lease ran out)'));
  if (lock.stale)
    parts.push(paint(style, 'yellow', `STALE: untouched for ${age(now - Date.parse(lock.updated_at))}`));
  return parts.join(' · ');
}

/**
 * A note as one line: control characters written as escapes (`\\n`), so that a note cannot start a
 * line of its own that reads like an answer (`HELD src/** by root`). --json keeps the text as it is.
 */
export function visible(text: string): string {
  return text.replace(/[\p{Cc}\p{Zl}\p{Zp}]/gu, (c) =>
    c === '\n' ? '\\n' : c === '\t' ? '\\t' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function lockLines(lock: Lock, now: number, style: Style, indent = '  '): string[] {
  const lines = [`${indent}${paint(style, 'bold', lock.scope)}  ${describeHolder(lock, now, style)}`];
  for (const note of lock.notes.slice(-5)) lines.push(`${indent}  note ${note.at}: ${visible(note.text)}`);
  if (lock.notes.length > 5) lines.push(`${indent}  (${lock.notes.length - 5} earlier notes; see --json)`);
  return lines;
}
