import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WatchFrames, lengthPrefixed, readWatchEvent, watchEventFrame, type ProtobufWatchEvent } from '../../../src/api/protobuf-watch.js';
import { decodeWatchStream } from '../../support/protobuf-tree.js';

/** A protobuf ConfigMap body, as a member writes one: magic, runtime.Unknown {typeMeta, raw}. */
function configMap(name: string): Buffer {
  const str = (no: number, s: string) => Buffer.concat([Buffer.from([(no << 3) | 2, Buffer.byteLength(s)]), Buffer.from(s)]);
  const msg = (no: number, inner: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2, inner.length]), inner]);
  const object = msg(1, Buffer.concat([str(1, name), str(6, '42')]));
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), msg(1, Buffer.concat([str(1, 'v1'), str(2, 'ConfigMap')])), msg(2, object), str(3, ''), str(4, '')]);
}

describe('protobuf watch frames', () => {
  it('writes an event that a stream reader (and the test decoder) reads back', () => {
    const event: ProtobufWatchEvent = { type: 'ADDED', object: configMap('a') };
    const frame = watchEventFrame(event);
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
    expect(readWatchEvent(frame.subarray(4))).toEqual(event);
    const [decoded] = decodeWatchStream(frame);
    expect(decoded!.type).toBe('ADDED');
  });

  it('finds every frame however the stream is cut into chunks', () => {
    fc.assert(fc.property(fc.array(fc.nat({ max: 99999 }), { minLength: 1, maxLength: 8 }), fc.array(fc.integer({ min: 1, max: 600 }), { minLength: 1, maxLength: 40 }), (names, cuts) => {
      const events = names.map((n, i) => ({ type: i % 2 ? 'MODIFIED' : 'ADDED', object: configMap(`cm-${n}`) }));
      const stream = Buffer.concat(events.map(watchEventFrame));
      const reader = new WatchFrames();
      const got: ProtobufWatchEvent[] = [];
      let at = 0;
      for (let i = 0; at < stream.length; i++) {
        const size = cuts[i % cuts.length]!;
        for (const f of reader.push(stream.subarray(at, at + size))) got.push(readWatchEvent(f)!);
        at += size;
      }
      expect(got).toEqual(events);
    }));
  });

  it('refuses a frame length no object has, and reads nothing from bytes that are no event', () => {
    const huge = Buffer.alloc(4);
    huge.writeUInt32BE(0xfffffff0, 0);
    expect(() => new WatchFrames().push(huge)).toThrow(/watch frame/);
    expect(readWatchEvent(Buffer.from([0x0a, 0x05, 0x41]))).toBeUndefined();
    expect(readWatchEvent(lengthPrefixed(Buffer.from([0x0a, 0x01, 0x41])).subarray(4))).toBeUndefined();
  });
});
