/**
 * Every decision of the contract (docs/concepts.md), as pure functions of a store snapshot.
 * A backend runs one of these inside its atomic step and commits the returned changes; nothing
 * in them touches the disk, the network, the clock or the process table. They live in
 * core/decisions/, by subject; this module names them for the rest of the code.
 */
export type { EventType, StoreEvent } from './events.js';
export {
  type AskStatus,
  type Delivered,
  decideAsk,
  decideReply,
  decideTakeMail,
  type ReplyStatus,
} from './decisions/ask.js';
export { decideAcquire } from './decisions/acquire.js';
export {
  type ClaimOutcome,
  type ClaimRequest,
  type ClaimStatus,
  decideClaim,
  decideClaimLocks,
  decideClaimsEnd,
} from './decisions/claim.js';
export type { Caller, DecisionContext } from './decisions/context.js';
export { frozenDropped } from './decisions/freeze.js';
export { decideLeaseCheck, decideLeaseRelease, decideLeaseRenew } from './decisions/lease-refs.js';
export { decideLeave } from './decisions/leave.js';
export { waiterKey } from './decisions/line.js';
export { decideCheck, decideList } from './decisions/look.js';
export { decideBreak, decideNote, decideResume } from './decisions/note-resume-break.js';
export {
  type AcquireRequest,
  type AcquireStatus,
  type BreakStatus,
  type Changes,
  type CheckStatus,
  type Decided,
  type FrozenFile,
  isEmpty,
  type LeaseCheckStatus,
  type LeaseRef,
  type ListOutcome,
  type ListStatus,
  type NoteStatus,
  type Outcome,
  type ReleaseStatus,
  type RenewStatus,
  type ResumeStatus,
  type StoreState,
  type Target,
  type Tombstone,
  type Warning,
  type WaitTicket,
} from './decisions/outcomes.js';
export { decideRelease } from './decisions/release.js';
export { decideRenew } from './decisions/renew.js';
