import { StatusError, badRequest } from '../api/status.js';
import { bodyFormat, parseBody } from '../api/write-body.js';
import { isJsonObject } from '../util/json-object.js';
import type { ResourceTarget } from './owner.js';

/**
 * Creates a member would fail badly on, refused as the caller's mistake before any member is
 * asked, in the words the apiserver uses for them: the member's own answer is a 500, or never
 * comes at all. Bodies flotilla can read (JSON, YAML); a protobuf body goes as it came.
 */

interface CreateMeta {
  name?: unknown;
  generateName?: unknown;
  resourceVersion?: unknown;
}

/** `method` and `target` as the member gets them (a tenant's already in the member's names). */
export function refuseUnservableCreate(method: string, target: ResourceTarget, body: Buffer | undefined, contentType: string | undefined): void {
  const service = target.group === '' && target.resource === 'services' && target.subresource === undefined;
  const creates = method === 'POST' && target.name === undefined;
  // A PUT of a Service that does not exist creates it (services allow create on update).
  if (!creates && !(service && method === 'PUT' && target.name !== undefined)) return;
  // Other kinds' bodies are read only when they can name a resourceVersion: a create is not parsed twice for nothing.
  if (!service && !body?.includes('resourceVersion')) return;
  const meta = createMeta(body, contentType);
  if (creates) refuseResourceVersion(meta);
  if (service && meta) refuseUnallocatableService(method === 'PUT' ? { ...meta, name: target.name } : meta);
}

function createMeta(body: Buffer | undefined, contentType: string | undefined): CreateMeta | undefined {
  const format = bodyFormat(contentType);
  if (!body || !format) return undefined;
  let doc: unknown;
  try {
    doc = parseBody(body.toString('utf8'), format);
  } catch {
    return undefined;
  }
  return isJsonObject(doc) && isJsonObject(doc['metadata']) ? (doc['metadata'] as CreateMeta) : isJsonObject(doc) ? {} : undefined;
}

/** The apiserver's storage answers a create that names a resourceVersion with a 500. */
function refuseResourceVersion(meta: CreateMeta | undefined): void {
  const rv = meta?.resourceVersion;
  if (typeof rv === 'string' && rv !== '') throw badRequest('metadata.resourceVersion: must not be set on an object to be created');
}

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_MESSAGE = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/**
 * A Service's ClusterIP is allocated before its name is validated, and with no valid name every
 * address of the range is tried in turn (kubernetes/kubernetes#135333): a member then spends
 * minutes on one nameless Service. Its name is checked here as the apiserver checks it after.
 */
function refuseUnallocatableService(meta: CreateMeta): void {
  const name = typeof meta.name === 'string' ? meta.name : '';
  const generateName = typeof meta.generateName === 'string' ? meta.generateName : '';
  if (name === '' && generateName === '') {
    throw serviceInvalid('', 'Required value: name or generateName is required', 'FieldValueRequired', 'metadata.name');
  }
  if (name !== '') {
    if (name.length > 63 || !DNS1035_LABEL.test(name)) throw serviceInvalid(name, `Invalid value: ${JSON.stringify(name)}: ${name.length > 63 ? 'must be no more than 63 characters' : DNS1035_MESSAGE}`, 'FieldValueInvalid', 'metadata.name');
    return;
  }
  // A prefix may end in '-': the generated characters follow it.
  const masked = generateName.endsWith('-') ? `${generateName.slice(0, -1)}a` : generateName;
  if (masked.length > 63 || !DNS1035_LABEL.test(masked)) throw serviceInvalid('', `Invalid value: ${JSON.stringify(generateName)}: ${DNS1035_MESSAGE}`, 'FieldValueInvalid', 'metadata.generateName');
}

function serviceInvalid(name: string, detail: string, reason: string, field: string): StatusError {
  return new StatusError(422, 'Invalid', `Service ${JSON.stringify(name)} is invalid: ${field}: ${detail}`, { name, kind: 'Service', causes: [{ reason, message: detail, field }] });
}
