import type { FastifyReply } from 'fastify';
import { editedAnswer } from './answer-edits.js';
import type { Doc } from './member-answers.js';

/**
 * A live read's answer written: edited as the read's edits say (answer-edits.ts), its bytes taken
 * from the read's hold first (a read the bound refuses fails whole), one Warning of each text.
 */

export function send(reply: FastifyReply, doc: Doc, warnings: readonly string[]): FastifyReply {
  return sendBody(reply, Buffer.from(JSON.stringify(doc)), warnings);
}

export function sendBody(reply: FastifyReply, answer: Buffer, warnings: readonly string[]): FastifyReply {
  const edits = reply.liveRead?.edits;
  return sendAs(reply, edits ? editedAnswer(answer, edits) : answer, 'application/json', warnings);
}

export function sendAs(reply: FastifyReply, body: Buffer, contentType: string, warnings: readonly string[]): FastifyReply {
  const hold = reply.liveRead?.hold;
  if (hold && !hold.take(body.length)) throw hold.refusal();
  const unique = [...new Set(warnings)];
  if (unique.length) reply.header('warning', unique);
  return reply.code(200).type(contentType).send(body);
}
