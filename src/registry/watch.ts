import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError, parseFleetConfig } from './config.js';
import type { FleetConfig } from './fleet-config.js';
import { CONFIG_RELOAD_DEBOUNCE_MS } from './defaults.js';

/**
 * Re-reads the fleet configuration when its file changes. The directory is watched, not the file:
 * editors and `kubectl create configmap` mounts replace files by rename, which ends a watch on the
 * file itself. Changes are debounced; an invalid file is reported and the running config kept.
 */
export interface ConfigWatchHandlers {
  onConfig: (config: FleetConfig) => Promise<void>;
  onError: (message: string) => void;
  /** What makes a well-formed file unacceptable to the running flotilla (refused like an invalid one). */
  refuse?: (config: FleetConfig) => string | undefined;
}

export function watchFleetConfig(path: string, handlers: ConfigWatchHandlers, debounceMs = CONFIG_RELOAD_DEBOUNCE_MS): { close(): void } {
  const file = resolve(path);
  const name = basename(file);
  let lastText: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running = Promise.resolve();

  const reload = async () => {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      handlers.onError(`${file}: ${(e as Error).message}`);
      return;
    }
    if (text === lastText) return;
    lastText = text;
    let config: FleetConfig;
    try {
      config = parseFleetConfig(text, file);
    } catch (e) {
      handlers.onError(e instanceof ConfigError ? e.message : String(e));
      return;
    }
    const refused = handlers.refuse?.(config);
    if (refused !== undefined) {
      handlers.onError(refused);
      return;
    }
    await handlers.onConfig(config);
  };

  // The text the process started with is the baseline: only real changes reload.
  void readFile(file, 'utf8').then((t) => (lastText ??= t), () => undefined);

  const watcher: FSWatcher = watch(dirname(file), (_event, changed) => {
    if (changed !== null && changed !== name && !String(changed).startsWith('..')) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running.then(reload).catch((e: unknown) => handlers.onError(String(e)));
    }, debounceMs);
  });
  return {
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}

/**
 * Where the running configuration's changes come from: the fleet file, or a Fleet object on a hub
 * (src/hub). Every source hands changes to the same handlers, so a reload is one path whatever
 * its source.
 */
export interface ConfigSource {
  /** How messages name the source: the file's name, `Fleet/<name>`. */
  readonly name: string;
  /** Delivers each later change (the configuration flotilla started with is the baseline). */
  watch(handlers: ConfigWatchHandlers): { close(): void };
}

export function fileConfigSource(path: string): ConfigSource {
  return { name: basename(path), watch: (handlers) => watchFleetConfig(path, handlers) };
}
