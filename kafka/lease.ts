// The copier's view of its write lease (DESIGN §5.3): one writer per partition set, fenced by an
// epoch kept in Postgres (db/leases.ts implements it). The copier never produces unless
// validUntil() is in the future, so a writer that cannot renew stops on its own even when it
// cannot reach Postgres to learn it was fenced. A new owner waits out expiry + grace, and the
// grace must exceed the produce request timeout so no old in-flight write lands after it.
export interface PartitionLease {
  /** Wait until this owner holds the lease (free, released, or expired + grace); observes signal. */
  acquire(signal: AbortSignal): Promise<void>;
  /** Extend the lease; throws KmirrorError LEASE_LOST when another owner took it. */
  renew(): Promise<void>;
  /** Give it up (on clean stop), so the next owner need not wait. */
  release(): Promise<void>;
  /** Local clock time (ms) until which the lease is held for sure; 0 when not held. */
  validUntil(): number;
  /** How often the copier renews, in ms (a fraction of the time to live). */
  readonly renewEveryMs: number;
  /** How long after expiry another owner must still wait; the copier refuses a lease whose grace
   *  does not exceed its produce timeout. */
  readonly graceMs: number;
  /** Identifies the lease in errors and logs: no secrets. */
  readonly description: string;
}
