import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { prefersProtobuf, prefersProtobufMetadata } from '../../api/negotiate.js';
import { metadataAsProtobuf } from '../../api/protobuf-metadata.js';
import { jsonAsProtobufInTurns } from '../../api/protobuf-transcode.js';
import { PROTOBUF_CONTENT_TYPE } from '../../api/protobuf-object.js';
import { gatherUpTo } from '../../util/bounded-gather.js';

/**
 * The most JSON an answer is gathered to be re-encoded (~25k pods): a larger one, a list asked
 * without `limit` (client-go's informers page theirs), goes out as JSON, which the client also
 * takes, and the memory one answer holds stays bounded.
 */
const MAX_REENCODED_BYTES = 64 * 1024 * 1024;

/**
 * Reads go out in protobuf when the client asks for that first, as a member answers them:
 * client-go's typed clients and informers (`application/vnd.kubernetes.protobuf,
 * application/json`) get a built-in kind's object or list transcoded from the JSON answer
 * (api/protobuf-transcode.ts), and its metadata client a PartialObjectMetadata(List)
 * (api/protobuf-metadata.ts says why it matters). Cached and live answers alike, Status errors
 * too; a custom resource stays JSON, as the apiserver serves it. A streamed list is gathered
 * first (protobuf states the list's length before its items), up to MAX_REENCODED_BYTES.
 * Watches encode their own events (mux/watch-encoding.ts).
 */
const protobufAnswers: FastifyPluginAsync = async (app) => {
  app.addHook('onSend', async (req, reply, payload) => {
    if (req.method !== 'GET') return payload;
    const accept = req.headers.accept;
    if (!accept?.includes('protobuf')) return payload;
    const ok = reply.statusCode === 200;
    const wantsList = ok && prefersProtobufMetadata(accept, { list: true });
    const wantsObject = ok && prefersProtobufMetadata(accept, { list: false });
    const wantsPlain = !wantsList && !wantsObject && prefersProtobuf(accept);
    if (!wantsList && !wantsObject && !wantsPlain) return payload;
    if (!String(reply.getHeader('content-type') ?? '').startsWith('application/json')) return payload;
    const gathered = await gatherUpTo(payload, MAX_REENCODED_BYTES);
    if (!gathered) return payload;
    if ('passOn' in gathered) return gathered.passOn;
    const json = gathered.whole;
    let body: Buffer | undefined;
    if (wantsPlain) body = await jsonAsProtobufInTurns(json);
    else {
      const encoded = metadataAsProtobuf(json);
      if (encoded && (encoded.list ? wantsList : wantsObject)) body = encoded.body;
    }
    if (!body) return json;
    // The member's own Content-Type for it: the bare protobuf type.
    reply.header('content-type', PROTOBUF_CONTENT_TYPE);
    return body;
  });
};

export const protobufAnswersPlugin = fp(protobufAnswers, { name: 'flotilla-protobuf-answers', fastify: '5.x', dependencies: ['flotilla-errors'] });
