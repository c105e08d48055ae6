/**
 * Warnings of this process's stores chosen by the probe (a server answered at 127.0.0.1:6379 when a
 * new store was made): the first answer on such a store says so, and how to keep files instead. A
 * module of its own, without imports, so that the command line reads it without loading a store.
 */
export interface ProbeNotice {
  readonly code: 'W_REDIS_PROBED';
  readonly message: string;
  readonly store: string;
  readonly [detail: string]: unknown;
}

const notices: ProbeNotice[] = [];

export function noteProbedStore(notice: ProbeNotice): void {
  notices.push(notice);
}

/** The notices not told yet; each is told once. */
export function takeProbeNotices(): ProbeNotice[] {
  return notices.splice(0);
}
