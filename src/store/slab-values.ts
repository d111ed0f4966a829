/**
 * An lmdb-js value encoder for range reads of stored bytes: each value is copied into a shared
 * slab and returned as a view of it. With `encoding: 'binary'` lmdb-js returns every value as a
 * buffer of its own, an ArrayBuffer allocated (and later collected) per object: the largest
 * remaining cost of a fleet list's range loop. A decoder that does not ask for a stable buffer
 * (`needsStableBuffer`) is handed lmdb-js's shared read buffer and the value's size, and may copy
 * from it once.
 *
 * A view keeps its whole slab alive: values read this way are for reads that use the bytes at
 * once (a list copies them into its response chunks), never for holding on to.
 */
export const SLAB_BYTES = 1024 * 1024;

export function slabValues(slabBytes = SLAB_BYTES): { encode(value: Buffer): Buffer; decode(shared: Uint8Array, size: number): Buffer } {
  let slab = Buffer.allocUnsafe(slabBytes);
  let used = 0;
  return {
    // Never written through: the store writes objects through its binary handle.
    encode: (value) => value,
    decode(shared, size) {
      if (used + size > slab.length) {
        slab = Buffer.allocUnsafe(Math.max(slabBytes, size));
        used = 0;
      }
      // lmdb-js sets its own `length` on the shared buffer: read it through a plain view.
      slab.set(new Uint8Array(shared.buffer, shared.byteOffset, size), used);
      const view = slab.subarray(used, used + size);
      used += size;
      return view;
    },
  };
}
