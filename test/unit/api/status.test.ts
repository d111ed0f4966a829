import { describe, expect, it } from 'vitest';
import { answerMessage, conflict, expired, invalid, isStatusObject, notFound, StatusError, timeout, tooManyRequests } from '../../../src/api/status.js';

describe('Status errors', () => {
  it('words NotFound as the apiserver does, with details', () => {
    expect(notFound({ group: '', resource: 'pods' }, 'x').toStatus()).toEqual({
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'pods "x" not found', reason: 'NotFound', details: { name: 'x', kind: 'pods' }, code: 404,
    });
    expect(notFound({ group: 'apps', resource: 'deployments' }, 'd').message).toBe('deployments.apps "d" not found');
  });

  it('pairs every code with its reason', () => {
    expect([conflict('c'), expired('e'), invalid('i'), timeout('t'), tooManyRequests('r', 2)].map((e) => [e.code, e.reason])).toEqual([
      [409, 'Conflict'], [410, 'Expired'], [422, 'Invalid'], [504, 'Timeout'], [429, 'TooManyRequests'],
    ]);
    expect(tooManyRequests('slow down', 3).toStatus()).toMatchObject({ details: { retryAfterSeconds: 3 } });
    expect(invalid('bad', [{ field: 'f', message: 'm' }]).toStatus()).toMatchObject({ details: { causes: [{ field: 'f', message: 'm' }] } });
  });

  it('carries list metadata when given (a fresh continue token on 410)', () => {
    expect(new StatusError(410, 'Expired', 'old', undefined, undefined, { continue: 'tok' }).toStatus().metadata).toEqual({ continue: 'tok' });
  });

  it('recognises a member’s Status', () => {
    expect(isStatusObject({ kind: 'Status', apiVersion: 'v1', code: 403 })).toBe(true);
    expect(isStatusObject({ kind: 'Pod', apiVersion: 'v1' })).toBe(false);
    expect(isStatusObject(null)).toBe(false);
  });
});

describe('a member’s error answer as a message', () => {
  it('is the Status message, a text answer’s first bytes, never a binary answer’s bytes', () => {
    expect(answerMessage(Buffer.from('{"kind":"Status","message":"pods \\"x\\" is forbidden"}'))).toBe('pods "x" is forbidden');
    expect(answerMessage(Buffer.from('upstream connect error'))).toBe('upstream connect error');
    const protobufStatus = Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0c]), Buffer.from('v1\x12\x06Status'), Buffer.from([0x1a, 0x02, 0xff, 0x01])]);
    expect(answerMessage(protobufStatus)).toBe(`(${protobufStatus.length} bytes not shown)`);
    expect(answerMessage(undefined)).toBe('');
  });
});
