import { describe, expect, it } from 'vitest';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { encodeMessage, jsonAsProtobuf, jsonAsProtobufInTurns, protobufTypeOf } from '../../../src/api/protobuf-transcode.js';
import { protobufBody } from '../../../src/api/protobuf-object.js';
import { goDurationNanos, isGoDuration } from '../../../src/api/go-duration.js';

/**
 * The transcoder's own rules. Its bytes are held to a member's encoder across every built-in
 * kind by test/e2e/protobuf-reads.test.ts; these pin the cases a seeded fleet may not show.
 */

/** A message's fields as [number, value]: varints as bigint, length-delimited as bytes. */
function fields(bytes: Uint8Array): [number, bigint | Uint8Array][] {
  const r = new BinaryReader(bytes);
  const out: [number, bigint | Uint8Array][] = [];
  while (r.pos < r.len) {
    const [no, wire] = r.tag();
    out.push([no, wire === 0 ? BigInt(r.int64()) : r.bytes()]);
  }
  return out;
}

const field = (bytes: Uint8Array, no: number) => fields(bytes).filter(([n]) => n === no).map(([, v]) => v);
const text = (v: unknown) => Buffer.from(v as Uint8Array).toString();
const POD = protobufTypeOf('v1', 'Pod')!;

describe('protobufTypeOf', () => {
  it('knows built-in kinds and their lists, not custom resources or Tables', () => {
    expect(protobufTypeOf('v1', 'Pod')).toBeTypeOf('number');
    expect(protobufTypeOf('apps/v1', 'DeploymentList')).toBeTypeOf('number');
    expect(protobufTypeOf('v1', 'Status')).toBeTypeOf('number');
    expect(protobufTypeOf('example.com/v1', 'Widget')).toBeUndefined();
    expect(protobufTypeOf('meta.k8s.io/v1', 'Table')).toBeUndefined();
  });
});

describe('encodeMessage', () => {
  it('writes fields Go holds by value even when JSON leaves them out, and no pointer that is unset', () => {
    const pod = encodeMessage(POD, { metadata: { name: 'p' } });
    // metadata, spec and status: structs, always written.
    expect(fields(pod).map(([n]) => n)).toEqual([1, 2, 3]);
    const meta = field(pod, 1)[0] as Uint8Array;
    // name, generateName, namespace, selfLink, uid, resourceVersion, generation, creationTimestamp: no deletionTimestamp.
    expect(fields(meta).map(([n]) => n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Go's zero time is an empty message.
    expect((field(meta, 8)[0] as Uint8Array).length).toBe(0);
  });

  it('writes times as seconds (metav1.Time drops the fraction), micro times with nanoseconds', () => {
    const meta = field(encodeMessage(POD, { metadata: { creationTimestamp: '2026-01-02T03:04:05Z', deletionTimestamp: '2026-01-02T03:04:06Z' } }), 1)[0] as Uint8Array;
    expect(fields(field(meta, 8)[0] as Uint8Array)).toEqual([[1, 1767323045n], [2, 0n]]);
    expect(fields(field(meta, 9)[0] as Uint8Array)).toEqual([[1, 1767323046n], [2, 0n]]);
    const lease = encodeMessage(protobufTypeOf('coordination.k8s.io/v1', 'Lease')!, { spec: { acquireTime: '2026-01-02T03:04:05.123456Z' } });
    const acquire = field(field(lease, 2)[0] as Uint8Array, 3)[0] as Uint8Array;
    expect(fields(acquire)).toEqual([[1, 1767323045n], [2, 123456000n]]);
  });

  it('sorts map entries by key, and writes a byte map’s empty value but not a null one', () => {
    const secret = encodeMessage(protobufTypeOf('v1', 'Secret')!, { data: { b: 'AAE=', a: '', c: null } });
    const entries = field(secret, 2).map((e) => fields(e as Uint8Array));
    expect(entries.map((e) => text(e[0]![1]))).toEqual(['a', 'b', 'c']);
    expect(entries.map((e) => e.length)).toEqual([2, 2, 1]);
    expect([...(entries[1]![1]![1] as Uint8Array)]).toEqual([0, 1]);
  });

  it('writes an int-or-string with its type, and quantities as their strings', () => {
    const svc = encodeMessage(protobufTypeOf('v1', 'Service')!, { spec: { ports: [{ port: 80, targetPort: 'http' }, { port: 81, targetPort: 8081 }] } });
    const ports = field(field(svc, 2)[0] as Uint8Array, 1).map((p) => fields(field(p as Uint8Array, 4)[0] as Uint8Array));
    expect(ports.map((p) => p.map(([n, v]) => [n, typeof v === 'bigint' ? v : text(v)]))).toEqual([
      [[1, 1n], [2, 0n], [3, 'http']],
      [[1, 0n], [2, 8081n], [3, '']],
    ]);
    const quota = encodeMessage(protobufTypeOf('v1', 'ResourceQuota')!, { spec: { hard: { cpu: '1500m' } } });
    const hard = fields(field(field(quota, 2)[0] as Uint8Array, 1)[0] as Uint8Array);
    expect(text(hard[0]![1])).toBe('cpu');
    expect(text(field(hard[1]![1] as Uint8Array, 1)[0])).toBe('1500m');
  });

  it('flattens inlined structs back into their own message (a volume’s source)', () => {
    const volume = field(field(encodeMessage(POD, { spec: { volumes: [{ name: 'v', emptyDir: { medium: 'Memory' } }] } }), 2)[0] as Uint8Array, 1)[0] as Uint8Array;
    const source = field(volume, 2)[0] as Uint8Array;
    const emptyDir = field(source, 2)[0] as Uint8Array;
    expect(text(field(emptyDir, 1)[0])).toBe('Memory');
  });
});

describe('goDurationNanos', () => {
  it('reads Go durations, and nothing else', () => {
    expect(goDurationNanos('1h2m3.5s')).toBe(3_723_500_000_000n);
    expect(goDurationNanos('-1.5s')).toBe(-1_500_000_000n);
    expect(goDurationNanos('300ms')).toBe(300_000_000n);
    expect(goDurationNanos('2us')).toBe(2_000n);
    expect(goDurationNanos('0s')).toBe(0n);
    expect(goDurationNanos(undefined)).toBe(0n);
    expect(goDurationNanos('1x')).toBe(0n);
    expect([isGoDuration('1m30.5s'), isGoDuration('0'), isGoDuration('5'), isGoDuration('1h-2m')]).toEqual([true, true, false, false]);
  });
});

describe('jsonAsProtobuf', () => {
  const pods = [
    { metadata: { name: 'a', namespace: 'n', labels: { x: 'y' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    { metadata: { name: 'b', namespace: 'n' }, status: { phase: 'Running' } },
  ];
  const list = { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '7', continue: 'x', remainingItemCount: 3 }, items: pods };

  it('reads a list an item at a time into what the whole list encodes to', () => {
    const type = protobufTypeOf('v1', 'PodList')!;
    expect(jsonAsProtobuf(JSON.stringify(list))).toEqual(protobufBody('v1', 'PodList', encodeMessage(type, list)));
    expect(jsonAsProtobuf(JSON.stringify({ ...list, items: [] }))).toEqual(protobufBody('v1', 'PodList', encodeMessage(type, { ...list, items: [] })));
    // Whitespace and member order as a client may not write them.
    expect(jsonAsProtobuf(`{ "items" : ${JSON.stringify(pods, null, 1)}, "kind":"PodList", "metadata":{"resourceVersion":"7","continue":"x","remainingItemCount":3},"apiVersion":"v1" }`)).toEqual(protobufBody('v1', 'PodList', encodeMessage(type, list)));
  });

  it('gives the same bytes in turns, letting the event loop in while it works through a long list', async () => {
    const long = { ...list, items: Array.from({ length: 3000 }, (_, i) => ({ ...pods[0], metadata: { ...pods[0]!.metadata, name: `p-${i}` } })) };
    const body = Buffer.from(JSON.stringify(long));
    let turns = 0;
    const ticking = setInterval(() => turns++, 0);
    // Turns of 0 ms: it lets the loop in every 32 items, however fast this machine is.
    const inTurns = await jsonAsProtobufInTurns(body, 0);
    clearInterval(ticking);
    expect(inTurns).toEqual(jsonAsProtobuf(body));
    expect(turns).toBeGreaterThan(10);
  });

  it('encodes an object with its envelope', () => {
    expect(jsonAsProtobuf(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...pods[0] }))).toEqual(protobufBody('v1', 'Pod', encodeMessage(POD, pods[0])));
  });

  it('declines what has no protobuf encoding, and bytes it cannot follow', () => {
    expect(jsonAsProtobuf('{"kind":"Widget","apiVersion":"example.com/v1","metadata":{}}')).toBeUndefined();
    expect(jsonAsProtobuf('{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[]}')).toBeUndefined();
    expect(jsonAsProtobuf('{"kind":"PodList","apiVersion":"v1","items":[{"metadata":')).toBeUndefined();
    expect(jsonAsProtobuf('not json')).toBeUndefined();
    expect(jsonAsProtobuf('[]')).toBeUndefined();
  });
});
