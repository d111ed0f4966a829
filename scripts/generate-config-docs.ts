import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedConfigFiles } from './config-reference.js';

/** `npm run gen:config`: writes the configuration reference and the Fleet CRDs from the fleet file's schema. */
let root = import.meta.dirname;
// Run compiled from dist/scripts: the checkout is the nearest directory with a package.json.
while (!existsSync(join(root, 'package.json'))) root = dirname(root);
for (const [path, text] of Object.entries(generatedConfigFiles())) {
  writeFileSync(join(root, path), text);
  console.log(`wrote ${path}`);
}
