/** What `alock doctor` reports: one line per thing checked, and how to fix each problem. */
export type Area = 'settings' | 'store' | 'backend' | 'identity' | 'hooks' | 'freezes';

/**
 * `ok`: checked and fine. `note`: worth knowing, nothing to fix (exit 0). `problem`: something that
 * goes wrong in practice, with `fix` saying what to do (exit 1).
 */
export type Level = 'ok' | 'note' | 'problem';

export interface Finding {
  readonly area: Area;
  readonly level: Level;
  /** Stable, for scripts: `store_marker_unreadable`, `redis_eviction`, ... */
  readonly code: string;
  readonly message: string;
  readonly fix: string | null;
}

export function ok(area: Area, code: string, message: string): Finding {
  return { area, level: 'ok', code, message, fix: null };
}

export function note(area: Area, code: string, message: string, fix: string | null = null): Finding {
  return { area, level: 'note', code, message, fix };
}

export function problem(area: Area, code: string, message: string, fix: string): Finding {
  return { area, level: 'problem', code, message, fix };
}

/** At most `max` items, then how many more: a finding stays one readable line. */
export function some(items: readonly string[], max = 5): string {
  const shown = items.slice(0, max).join(', ');
  return items.length > max ? `${shown} and ${items.length - max} more` : shown;
}
