/** A wait or a server that a signal stops: the signal as an AbortSignal, and the exit code it means. */
import { constants } from 'node:os';
import { AgentLockError } from '../core/errors.js';

export interface Interruption {
  readonly signal: AbortSignal;
  /** The first signal received, if any. */
  readonly received: NodeJS.Signals | null;
  /** Every later signal too (run forwards them to its command). */
  onSignal(handler: (signal: NodeJS.Signals) => void): void;
  dispose(): void;
}

type Subscribe = (handler: (signal: NodeJS.Signals) => void) => () => void;

/** Turns the process's SIGINT, SIGTERM and SIGHUP (from bin/) into an AbortSignal while subscribed. */
export function interruption(subscribe: Subscribe | undefined): Interruption {
  const controller = new AbortController();
  const handlers = new Set<(signal: NodeJS.Signals) => void>();
  let received: NodeJS.Signals | null = null;
  const off =
    subscribe?.((sig) => {
      if (received === null) {
        received = sig;
        controller.abort(new AgentLockError('E_USAGE', `interrupted by ${sig}`));
      }
      for (const handler of handlers) handler(sig);
    }) ?? (() => {});
  return {
    signal: controller.signal,
    get received() {
      return received;
    },
    onSignal: (handler) => {
      handlers.add(handler);
    },
    dispose: off,
  };
}

/** 128 + the signal's number (this platform's: SIGUSR1 is 10 on Linux, 30 on macOS), as shells report a command killed by it. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}
