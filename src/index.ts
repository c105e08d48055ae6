export type { Backend, BackendKind } from './backends/backend.js';
export { MemoryStore } from './backends/memory/memory-store.js';
export type { Config } from './core/config.js';
export type {
  AcquireStatus,
  BreakStatus,
  CheckStatus,
  LeaseCheckStatus,
  ListOutcome,
  ListStatus,
  NoteStatus,
  Outcome,
  ReleaseStatus,
  RenewStatus,
  ResumeStatus,
  StoreEvent,
  Warning,
} from './core/decide.js';
export { AgentLockError, type ErrorCode } from './core/errors.js';
export { EVENT_TYPES, type EventType } from './core/events.js';
export { type Dashboard, type DashboardOptions, serveDashboard } from './ui/dashboard.js';
export type { Identity } from './core/identity.js';
export type { Checkout, Holder, Lock, Mode } from './core/lock.js';
export { W_OTHER_WORKTREE, type WorktreesPolicy, warningsForAgent } from './core/worktrees.js';
export { type Lease, LeaseLostError, type LeaseLostReason } from './store/lease.js';
export {
  type AcquireOptions,
  type EventQuery,
  type HoldOptions,
  type HoldResult,
  type IdentityOption,
  type Locks,
  type OpenLocksOptions,
  openLocks,
  openStore,
  type Session,
  type Store,
  type StoreOptions,
  type WithLockResult,
} from './locks.js';
