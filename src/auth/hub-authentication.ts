import type { MemberClient } from '../members/member-client.js';
import { DEFAULT_REQUEST_HEADERS, type RequestHeaderConfig } from './request-header.js';
import { HUB_AUTHENTICATION_READ_TIMEOUT_MS } from '../registry/defaults.js';

/**
 * What a hub publishes for its extension apiservers: the ConfigMap
 * `kube-system/extension-apiserver-authentication`, which kube-apiserver keeps filled with its
 * client CA and its front proxy's settings (requestheader CA, allowed names, header names). An
 * extension apiserver trusts callers exactly as the hub says; flags may say it instead.
 */
export interface HubAuthentication {
  /** The hub's client CA (PEM): client certificates it signed name users here too. */
  clientCA?: Buffer;
  /** The front proxy; absent when the hub has no aggregation layer configured. */
  requestHeader?: RequestHeaderConfig;
}

export const HUB_AUTHENTICATION_CONFIGMAP = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';

export async function hubAuthentication(hub: MemberClient): Promise<HubAuthentication> {
  const res = await hub.fetch({ path: HUB_AUTHENTICATION_CONFIGMAP, headers: { accept: 'application/json' }, signal: AbortSignal.timeout(HUB_AUTHENTICATION_READ_TIMEOUT_MS) });
  if (res.status !== 200) {
    throw new Error(`the hub's ${HUB_AUTHENTICATION_CONFIGMAP} could not be read (HTTP ${res.status}): ` +
      'flotilla needs get on that ConfigMap (the role extension-apiserver-authentication-reader in kube-system)');
  }
  const data = (JSON.parse(res.body.toString('utf8')) as { data?: Record<string, string> }).data ?? {};
  return fromConfigMapData(data);
}

/** The ConfigMap's keys as kube-apiserver writes them: PEM bundles, and JSON lists of strings. */
export function fromConfigMapData(data: Record<string, string>): HubAuthentication {
  const list = (key: string): string[] | undefined => {
    const raw = data[key];
    if (raw === undefined || raw === '') return undefined;
    const parsed = JSON.parse(raw) as unknown;
    if (!Array.isArray(parsed) || parsed.some((x) => typeof x !== 'string')) throw new Error(`extension-apiserver-authentication: ${key} is not a list of strings`);
    return parsed as string[];
  };
  const clientCA = data['client-ca-file'];
  const requestHeaderCA = data['requestheader-client-ca-file'];
  return {
    ...(clientCA ? { clientCA: Buffer.from(clientCA) } : {}),
    ...(requestHeaderCA
      ? {
          requestHeader: {
            clientCA: Buffer.from(requestHeaderCA),
            allowedNames: list('requestheader-allowed-names') ?? [],
            usernameHeaders: list('requestheader-username-headers') ?? DEFAULT_REQUEST_HEADERS.usernameHeaders,
            groupHeaders: list('requestheader-group-headers') ?? DEFAULT_REQUEST_HEADERS.groupHeaders,
            extraHeaderPrefixes: list('requestheader-extra-headers-prefix') ?? DEFAULT_REQUEST_HEADERS.extraHeaderPrefixes,
            uidHeaders: list('requestheader-uid-headers') ?? [],
          },
        }
      : {}),
  };
}
