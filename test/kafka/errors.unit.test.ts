// The one Kafka-error → code mapping (kafka/errors.ts), fed kafkajs' own error objects, and the
// per-partition answers RawCluster throws (KafkaAnswerError) mapped by the same table.
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaFailure } from '../../kafka/errors.ts';
import { KafkaAnswerError, kafkaError } from '../../kafka/protocol.ts';

const require = createRequire(import.meta.url);
const { createErrorFromCode } = require('kafkajs/src/protocol/error') as { createErrorFromCode: (code: number) => Error & { type: string; retriable: boolean } };
const { KafkaJSAggregateError, KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded } = kafkajs;
// Its declared constructor takes no argument; kafkajs' SASL authenticators pass the message.
const { KafkaJSSASLAuthenticationError } = require('kafkajs/src/errors') as { KafkaJSSASLAuthenticationError: new (message: string) => Error };

describe('Kafka errors → codes', () => {
  it.each([
    [29, 'TOPIC_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED', false],
    [31, 'CLUSTER_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED', false],
    [53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED', false],
    [3, 'UNKNOWN_TOPIC_OR_PARTITION', 'UNKNOWN_TOPIC', true],
    [6, 'NOT_LEADER_FOR_PARTITION', 'CLUSTER_UNREACHABLE', true],
    [38, 'INVALID_REPLICATION_FACTOR', 'KAFKA_ERROR', false],
    [87, 'INVALID_RECORD', 'KAFKA_ERROR', false],
  ])('broker error %i (%s) is %s, retryable %s — thrown by kafkajs or answered per partition', (code, type, expected, retryable) => {
    const thrown = kafkaFailure(createErrorFromCode(code), 'create topics on cluster west');
    expect(thrown).toMatchObject({ code: expected, retryable, details: { kafkaError: type } });
    expect(thrown.message).toMatch(/^create topics on cluster west: /);
    // Nested as kafkajs nests it (retries exhausted around the broker's answer): the same code.
    expect(kafkaFailure(new KafkaJSNumberOfRetriesExceeded(createErrorFromCode(code), { retryCount: 5, retryTime: 1000 }), 'x')).toMatchObject({ code: expected });
    expect(new KafkaAnswerError(`list offsets t-0: ${type}`, kafkaError(code)!)).toMatchObject({ code: expected, retryable, details: { kafkaError: type } });
  });

  it('connection failures are CLUSTER_UNREACHABLE (retryable), refused credentials CLUSTER_AUTHENTICATION_FAILED (final)', () => {
    expect(kafkaFailure(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:1'), 'cluster east')).toMatchObject({ code: 'CLUSTER_UNREACHABLE', retryable: true });
    expect(kafkaFailure(new KafkaJSSASLAuthenticationError('SASL PLAIN authentication failed'), 'cluster east')).toMatchObject({ code: 'CLUSTER_AUTHENTICATION_FAILED', retryable: false });
  });

  it('a broker certificate the client does not trust is CLUSTER_AUTHENTICATION_FAILED (final), naming Node\'s verdict, however deeply nested', () => {
    const untrusted = new KafkaJSConnectionError('Connection error: self-signed certificate in certificate chain', { code: 'SELF_SIGNED_CERT_IN_CHAIN' } as never);
    const expected = { code: 'CLUSTER_AUTHENTICATION_FAILED', retryable: false, details: { tlsError: 'SELF_SIGNED_CERT_IN_CHAIN' }, message: expect.stringMatching(/^cluster east: the broker's TLS certificate is not trusted \(SELF_SIGNED_CERT_IN_CHAIN: .*--ssl-ca-file/) };
    expect(kafkaFailure(untrusted, 'cluster east')).toMatchObject(expected);
    expect(kafkaFailure(new KafkaJSNumberOfRetriesExceeded(untrusted, { retryCount: 1, retryTime: 100 }), 'cluster east')).toMatchObject({ code: 'CLUSTER_AUTHENTICATION_FAILED' });
    // Other connection failures with a Node code stay CLUSTER_UNREACHABLE.
    expect(kafkaFailure(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED', { code: 'ECONNREFUSED' } as never), 'cluster east')).toMatchObject({ code: 'CLUSTER_UNREACHABLE' });
  });

  it('per-topic answers (CreateTopics: KafkaJSAggregateError) take the first final answer, else the first', () => {
    const refused = new KafkaJSAggregateError('Topic creation errors', [createErrorFromCode(6), createErrorFromCode(29)]);
    expect(kafkaFailure(refused, 'create destination topics')).toMatchObject({
      code: 'CLUSTER_AUTHORIZATION_FAILED',
      retryable: false,
      details: { kafkaError: 'TOPIC_AUTHORIZATION_FAILED' },
      message: expect.stringMatching(/^create destination topics: Topic creation errors \(.*Not authorized to access topics/),
    });
    const transient = new KafkaJSAggregateError('Topic creation errors', [createErrorFromCode(6), createErrorFromCode(6)]);
    expect(kafkaFailure(transient, 'create destination topics')).toMatchObject({ code: 'CLUSTER_UNREACHABLE', retryable: true });
  });
});
