// Names of mirrors, clusters and topics follow Kafka's topic-name rules (KIP-1279; review AS23/AS24:
// names carry no encoded state): 1..249 characters of [a-zA-Z0-9._-], and neither "." nor "..".
import { KmirrorError, type ErrorCode } from './errors.ts';

export const MAX_NAME_LENGTH = 249;
const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** Why `name` is not a legal Kafka-style name, or undefined when it is. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > MAX_NAME_LENGTH) return `is ${name.length} characters long (at most ${MAX_NAME_LENGTH})`;
  if (name === '.' || name === '..') return `cannot be '${name}'`;
  if (!LEGAL.test(name)) return 'may contain only ASCII letters, digits, ".", "_" and "-"';
  return undefined;
}

function check(kind: string, name: string, code: ErrorCode): void {
  const problem = nameProblem(name);
  if (problem !== undefined) {
    // JSON.stringify shows invisible or odd characters in the name unambiguously.
    throw new KmirrorError(code, `${kind} name ${JSON.stringify(name.slice(0, 300))} ${problem}`, { kind });
  }
}

export function assertMirrorName(name: string): void {
  check('mirror', name, 'INVALID_CLUSTER_MIRROR_NAME');
}

export function assertClusterName(name: string): void {
  check('cluster', name, 'INVALID_ARGUMENT');
}

export function assertTopicName(name: string): void {
  check('topic', name, 'INVALID_ARGUMENT');
}

/** Kafka's usual `topic-partition` notation, for messages. */
export function partitionName(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/** Names chosen by whole-name patterns (as Kafka tools match them): those an include pattern
 *  matches and no exclude pattern does. Topic, group and principal filters alike. */
export interface PatternFilter {
  readonly include: readonly string[];
  readonly exclude: readonly string[];
}

/** A whole-name pattern; INVALID_TOPIC_PATTERN naming `what` (topic, group, principal) when it
 *  does not compile. */
export function wholeNamePattern(pattern: string, what = 'topic'): RegExp {
  try {
    return new RegExp(`^(?:${pattern})$`);
  } catch (err) {
    throw new KmirrorError('INVALID_TOPIC_PATTERN', `${what} pattern ${JSON.stringify(pattern)} is not a valid regular expression: ${(err as Error).message}`, { pattern }, { cause: err });
  }
}

/** The test a PatternFilter makes of a name (patterns compiled once, here). */
export function filterMatcher(filter: PatternFilter, what: string): (name: string) => boolean {
  const include = filter.include.map((p) => wholeNamePattern(p, what));
  const exclude = filter.exclude.map((p) => wholeNamePattern(p, what));
  return (name) => include.some((r) => r.test(name)) && !exclude.some((r) => r.test(name));
}
