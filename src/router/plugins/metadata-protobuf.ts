import type { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { prefersProtobufMetadata } from '../../api/negotiate.js';
import { metadataAsProtobuf } from '../../api/protobuf-metadata.js';
import { PROTOBUF_CONTENT_TYPE } from '../../api/protobuf-object.js';

async function bytesOf(payload: unknown): Promise<Buffer | undefined> {
  if (Buffer.isBuffer(payload)) return payload;
  if (typeof payload === 'string') return Buffer.from(payload);
  if (payload && typeof (payload as Readable).pipe === 'function') {
    const chunks: Buffer[] = [];
    for await (const chunk of payload as Readable) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
    return Buffer.concat(chunks);
  }
  return undefined;
}

/**
 * Reads answered as PartialObjectMetadata(List) go out in protobuf when the client asks for that
 * first, as client-go's metadata client does and as a member answers it (api/protobuf-metadata.ts
 * says why it matters). Cached and live answers alike: the JSON answer is re-encoded as it
 * leaves. A streamed list is gathered first: protobuf states the list's length before its items.
 */
const metadataProtobuf: FastifyPluginAsync = async (app) => {
  app.addHook('onSend', async (req, reply, payload) => {
    if (req.method !== 'GET' || reply.statusCode !== 200) return payload;
    const accept = req.headers.accept;
    if (!accept?.includes('protobuf')) return payload;
    const wantsList = prefersProtobufMetadata(accept, { list: true });
    const wantsObject = prefersProtobufMetadata(accept, { list: false });
    if (!wantsList && !wantsObject) return payload;
    if (!String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload;
    const json = await bytesOf(payload);
    if (!json) return payload;
    const encoded = metadataAsProtobuf(json);
    if (!encoded || (encoded.list ? !wantsList : !wantsObject)) return json;
    // The member's own Content-Type for it: the bare protobuf type.
    reply.header('content-type', PROTOBUF_CONTENT_TYPE);
    return encoded.body;
  });
};

export const metadataProtobufPlugin = fp(metadataProtobuf, { name: 'flotilla-metadata-protobuf', fastify: '5.x', dependencies: ['flotilla-errors'] });
