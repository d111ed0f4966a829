import { describe, expect, it } from 'vitest';
import { parseReadRequest, type ReadQuery } from '../../../src/api/list-options.js';
import { StatusError } from '../../../src/api/status.js';

/** What parsing threw, as the client reads it (a Status). */
function refusal(query: ReadQuery, named = false): object {
  try {
    parseReadRequest(query, named);
  } catch (e) {
    if (e instanceof StatusError) return e.toStatus();
    throw e;
  }
  throw new Error(`accepted: ${JSON.stringify(query)}`);
}

const invalid = (...causes: { field: string; message: string }[]) => ({
  code: 422,
  reason: 'Invalid',
  message: `ListOptions.meta.k8s.io "" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
  details: { causes: causes.map((c) => ({ reason: 'FieldValueInvalid', ...c })) },
});

describe('a read request, parsed once', () => {
  it('the verb: watch when asked (true or 1), else get where the path names an object, else list', () => {
    expect(parseReadRequest({}, false).verb).toBe('list');
    expect(parseReadRequest({}, true).verb).toBe('get');
    expect(parseReadRequest({ watch: 'true' }, false).verb).toBe('watch');
    expect(parseReadRequest({ watch: '1' }, true).verb).toBe('watch');
    expect(parseReadRequest({ watch: 'yes' }, false).verb).toBe('list');
    // A parameter's first value counts.
    expect(parseReadRequest({ watch: ['true', 'false'] }, false).verb).toBe('watch');
  });

  it('reads every option, 0 and empty values as not given', () => {
    expect(parseReadRequest({
      watch: 'true', timeoutSeconds: '30', allowWatchBookmarks: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan',
      includeObject: 'Metadata', labelSelector: 'a=b', fieldSelector: 'metadata.name=x',
    }, false)).toEqual({
      verb: 'watch', resourceVersion: '', resourceVersionMatch: 'NotOlderThan', timeoutSeconds: 30, allowWatchBookmarks: true, sendInitialEvents: true,
      includeObject: 'Metadata', labelSelector: 'a=b', fieldSelector: 'metadata.name=x',
    });
    expect(parseReadRequest({ limit: '5', continue: 'tok', resourceVersion: '0' }, false)).toEqual({
      verb: 'list', resourceVersion: '0', limit: 5, continue: 'tok', allowWatchBookmarks: false, sendInitialEvents: false,
    });
    expect(parseReadRequest({ limit: '0', continue: '', watch: 'true', timeoutSeconds: '0' }, false)).toEqual({
      verb: 'watch', resourceVersion: '', allowWatchBookmarks: false, sendInitialEvents: false,
    });
  });

  it("reads a verb's own options only: a list's limit and continue, a watch's timeoutSeconds", () => {
    expect(parseReadRequest({ limit: 'x', continue: 'tok', resourceVersion: '5' }, true)).toMatchObject({ verb: 'get', resourceVersion: '5' });
    expect(parseReadRequest({ limit: 'x', watch: 'true' }, false).limit).toBeUndefined();
    expect(parseReadRequest({ timeoutSeconds: 'x' }, false).timeoutSeconds).toBeUndefined();
  });

  it('includeObject: Metadata, Object or None, else 400', () => {
    for (const v of ['Metadata', 'Object', 'None']) expect(parseReadRequest({ includeObject: v }, false).includeObject).toBe(v);
    expect(refusal({ includeObject: 'metadata' })).toMatchObject({ code: 400, reason: 'BadRequest', message: 'unrecognized includeObject value: "metadata"' });
  });

  it('limit and timeoutSeconds: an int64, else 400 naming the value', () => {
    expect(refusal({ limit: '-1' })).toMatchObject({ code: 400, reason: 'BadRequest', message: 'invalid limit: "-1"' });
    expect(refusal({ watch: 'true', timeoutSeconds: '9223372036854775808' })).toMatchObject({ code: 400, message: 'invalid timeoutSeconds: "9223372036854775808"' });
  });

  it('a resourceVersion other than "0" beside a continue token is 422', () => {
    const message = 'specifying resource version is not allowed when using continue';
    expect(refusal({ continue: 'tok', resourceVersion: '7' })).toMatchObject({ code: 422, message: `ListOptions.meta.k8s.io "" is invalid: resourceVersion: ${message}` });
  });

  it('resourceVersionMatch: Exact or NotOlderThan, only beside a resourceVersion, Exact not at "0"', () => {
    expect(parseReadRequest({ resourceVersion: '5', resourceVersionMatch: 'Exact' }, false).resourceVersionMatch).toBe('Exact');
    expect(refusal({ resourceVersion: '5', resourceVersionMatch: 'Newest' })).toMatchObject(invalid({ field: 'resourceVersionMatch', message: 'unsupported value "Newest": supported values: "Exact", "NotOlderThan"' }));
    expect(refusal({ resourceVersionMatch: 'NotOlderThan' })).toMatchObject(invalid({ field: 'resourceVersionMatch', message: 'resourceVersionMatch is forbidden unless resourceVersion is provided' }));
    expect(refusal({ resourceVersion: '0', resourceVersionMatch: 'Exact' })).toMatchObject(invalid({ field: 'resourceVersionMatch', message: 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' }));
    expect(refusal({ watch: 'true', resourceVersion: '5', resourceVersionMatch: 'NotOlderThan' })).toMatchObject(invalid({ field: 'resourceVersionMatch', message: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' }));
  });

  it('sendInitialEvents: a watch with bookmarks and NotOlderThan only, every cause named at once', () => {
    expect(parseReadRequest({ watch: 'true', sendInitialEvents: 'false', allowWatchBookmarks: 'true', resourceVersionMatch: 'NotOlderThan' }, false).sendInitialEvents).toBe(false);
    expect(refusal({ sendInitialEvents: 'true' })).toMatchObject(invalid(
      { field: 'sendInitialEvents', message: 'sendInitialEvents is forbidden for list' },
      { field: 'resourceVersionMatch', message: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' },
    ));
    expect(refusal({ watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'Exact' })).toMatchObject(invalid(
      { field: 'resourceVersionMatch', message: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' },
      { field: 'allowWatchBookmarks', message: 'sendInitialEvents requires setting allowWatchBookmarks to true' },
    ));
    expect(refusal({ watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'Bad', allowWatchBookmarks: 'true' })).toMatchObject(invalid(
      { field: 'resourceVersionMatch', message: 'unsupported value "Bad": supported values: "Exact", "NotOlderThan"' },
      { field: 'resourceVersionMatch', message: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan' },
    ));
  });

  it('checks in order: includeObject, then the combination rules, then the numbers, then continue', () => {
    expect(refusal({ includeObject: 'x', resourceVersionMatch: 'Exact', limit: 'y' })).toMatchObject({ code: 400, message: 'unrecognized includeObject value: "x"' });
    expect(refusal({ resourceVersionMatch: 'Exact', limit: 'y' })).toMatchObject({ code: 422 });
    expect(refusal({ limit: 'y', continue: 'tok', resourceVersion: '7' })).toMatchObject({ code: 400, message: 'invalid limit: "y"' });
  });
});
