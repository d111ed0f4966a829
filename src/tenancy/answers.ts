import { StatusError, notFound, notServed } from '../api/status.js';
import { bodyBytes, bodyFormat, parseBody } from '../api/write-body.js';
import { editProtobufObject, isProtobuf } from '../api/protobuf-object.js';
import { editsInPlace, tenantCells } from './object-bytes.js';
import { sharedNameRefused } from './request-names.js';
import { sharedName } from './tenant.js';
import { objectToMember, objectToTenant } from './document-names.js';
import type { ObjectNaming } from './naming-direction.js';
import { patchToMember } from './patch-names.js';
import { isJsonObject } from '../util/json-object.js';
import { checkTenantRbacWrite } from './write-rules.js';

/**
 * What a tenant sends to members and gets back, as whole documents: write bodies into the
 * member's names, answers (objects, lists, Tables, metadata, Status) into the tenant's, with
 * anything not the tenant's left out. Cached reads do this in place instead (object-bytes.ts);
 * these are the forwarded writes' and live reads' bodies, parsed anyway.
 */

/** A resource a tenant's request names, in the member's names. */
export interface NamedResource {
  group: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

/** How one tenant's request is rewritten: its names, and the resources a path names. */
export interface TenantNames {
  naming: ObjectNaming;
  resource(group: string, resource: string): NamedResource | undefined;
}

type Doc = Record<string, unknown>;


/**
 * A write body in the member's names: JSON and YAML parsed and rewritten whole, protobuf edited in
 * place where its metadata is all that names the tenant's names (else 415).
 */
export function bodyToMember(body: Buffer | undefined, contentType: string | undefined, method: string, resource: NamedResource | undefined, naming: ObjectNaming): Buffer | undefined {
  if (!body || body.length === 0) return body;
  if (isProtobuf(contentType)) return protobufToMember(body, resource, naming);
  const format = bodyFormat(contentType);
  if (!format) return body;
  const doc = parseBody(body.toString('utf8'), format);
  const patching = method === 'PATCH';
  // A create names its object in the body: one of the shared ClusterRoles is not the tenant's to
  // make, nor one whose generated name would read as shared (`system:…`) to the tenant.
  const metadata = (doc as { metadata?: { name?: unknown; generateName?: unknown } } | null)?.metadata;
  for (const named of [metadata?.name, metadata?.generateName]) {
    if (!patching && resource && typeof named === 'string' && sharedName(resource.group, resource.resource, named)) throw sharedNameRefused(naming.tenant, resource.resource, named);
  }
  // A patch is read as the resource it targets: one flotilla does not know it cannot put into the
  // member's names, so it does not go on as written.
  if (patching && !resource) throw notServed();
  const mediaType = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const rewritten = patching && resource ? patchToMember(doc, mediaType, { group: resource.group, kind: resource.kind, namespaced: resource.namespaced }, naming) : objectToMember(doc, naming);
  if (resource) checkTenantRbacWrite(resource.group, resource.resource, rewritten, patching && mediaType === 'application/json-patch+json', naming.tenant);
  // YAML is a superset of JSON: an apply patch goes on as JSON text, with the same meaning.
  return bodyBytes(rewritten);
}

/**
 * A protobuf body (client-go's typed clients send built-in kinds so: `kubectl create namespace`,
 * `create configmap`) names the tenant's names in its metadata only, for kinds edited in place
 * (object-bytes.ts) and for a Namespace: those are edited in the wire format. A kind that names
 * others in its body (a RoleBinding's subjects) cannot be read without its schema: 415, and the
 * client sends JSON (`kubectl create … --dry-run=client -o yaml | kubectl apply -f -`).
 */
function protobufToMember(body: Buffer, resource: NamedResource | undefined, naming: ObjectNaming): Buffer {
  const { tenant } = naming;
  const refuse = () => new StatusError(415, 'UnsupportedMediaType', `tenant ${tenant.id}: a protobuf ${resource?.kind ?? 'object'} names other objects flotilla cannot put into the member's names; send it as JSON or YAML`);
  const namespace = resource?.group === '' && resource.resource === 'namespaces';
  const edited = editProtobufObject(body, {
    rename: (field, value) => {
      if (field === 'namespace') return value === '' ? value : tenant.memberNamespace(value);
      return namespace && value !== '' ? tenant.memberNamespace(value) : value;
    },
  });
  if (!edited) throw refuse();
  // DeleteOptions name nothing; other kinds only in their metadata, when edited in place.
  if (edited.facts.kind !== 'DeleteOptions' && !namespace && !(resource && editsInPlace(tenant, resource))) throw refuse();
  return edited.body;
}

/**
 * An answer in the tenant's names; undefined when it is not the tenant's to see (a single object
 * of another tenant). Lists and Tables lose the items that are not the tenant's.
 */
export function answerToTenant(doc: unknown, naming: ObjectNaming, resource: NamedResource | undefined): unknown {
  if (!isJsonObject(doc)) return doc;
  const kind = doc['kind'];
  if (kind === 'Table') return tableToTenant(doc, naming, resource);
  if (kind === 'PartialObjectMetadataList') {
    const items = Array.isArray(doc['items']) ? doc['items'] : [];
    return { ...doc, items: items.map((i) => metadataToTenant(i, naming, resource)).filter((i) => i !== undefined) };
  }
  if (kind === 'PartialObjectMetadata') return metadataToTenant(doc, naming, resource);
  return objectToTenant(doc, naming);
}

/** What an answer is about: the resource read, and the object a get or write names. */
export interface AnsweredTarget {
  group: string;
  resource: string;
  name?: string;
}

/**
 * A parsed answer in the tenant's names, written out: the one way forwarded writes and live reads
 * show a tenant what members answered. 404, as the target names it, for what is not the tenant's
 * to see (another tenant's object). `then`: a last edit of what the tenant is shown.
 */
export function tenantAnswerBytes(doc: unknown, tenant: TenantNames, target: AnsweredTarget, then: (shown: unknown) => unknown = (d) => d): Buffer {
  const shown = answerToTenant(doc, tenant.naming, tenant.resource(target.group, target.resource));
  if (shown === undefined) throw notFound({ group: target.group, resource: target.resource }, target.name ?? '');
  return Buffer.from(JSON.stringify(then(shown)));
}

/** A member's answer body in the tenant's names: JSON (what a tenant's requests ask for) rewritten, another body as it came. */
export function answerBodyToTenant(body: Buffer, contentType: string | undefined, tenant: TenantNames, target: AnsweredTarget): Buffer {
  if (!(contentType ?? '').startsWith('application/json')) return body;
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    return body;
  }
  return tenantAnswerBytes(doc, tenant, target);
}

function tableToTenant(table: Doc, naming: ObjectNaming, resource: NamedResource | undefined): Doc {
  const rows = Array.isArray(table['rows']) ? table['rows'] : [];
  const shown = rows.flatMap((row) => {
    if (!isJsonObject(row)) return [];
    const object = row['object'];
    let shownObject: unknown = object;
    let renamed: { from: string; to: string } | undefined;
    if (isJsonObject(object)) {
      shownObject = object['kind'] === 'PartialObjectMetadata' ? metadataToTenant(object, naming, resource) : objectToTenant(object, naming);
      if (shownObject === undefined) return [];
      const from = nameOf(object);
      const to = nameOf(shownObject);
      if (from !== undefined && to !== undefined && from !== to) renamed = { from, to };
    }
    const cells = Array.isArray(row['cells']) ? tenantCells(row['cells'], naming.tenant, renamed) : row['cells'];
    return [{ ...row, cells, object: shownObject }];
  });
  return { ...table, rows: shown };
}

function nameOf(o: unknown): string | undefined {
  const md = isJsonObject(o) ? o['metadata'] : undefined;
  return isJsonObject(md) && typeof md['name'] === 'string' ? md['name'] : undefined;
}

/**
 * A PartialObjectMetadata carries no kind of its own: the resource read decides whether it is the
 * tenant's (its namespace, or its owned name) and how its names are shown.
 */
function metadataToTenant(item: unknown, naming: ObjectNaming, resource: NamedResource | undefined): unknown {
  if (!isJsonObject(item) || !resource) return item;
  const shown = objectToTenant({ ...item, apiVersion: resource.group ? `${resource.group}/v1` : 'v1', kind: resource.kind }, naming);
  if (!isJsonObject(shown)) return undefined;
  return { ...item, metadata: shown['metadata'] };
}
