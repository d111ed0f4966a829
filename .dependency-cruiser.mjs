/**
 * flotilla's layers, bottom to top (docs/ARCHITECTURE.md, "Layers"). A module may import from its
 * own layer and the layers below it, never above, and nothing may form a cycle. `npm run lint`
 * runs this; a new upward import fails CI.
 */
const LAYERS = [
  ['util', 'tls'],
  ['api'],
  ['table', 'registry'],
  ['members'],
  ['resources'],
  ['store'],
  ['ingest'],
  ['cacher'],
  ['authz', 'hierarchy', 'tenancy', 'hub'],
  ['discovery'],
  ['metrics'],
  ['view'],
  ['mux'],
  ['forward', 'auth'],
  ['router'],
  ['cli'],
];

const folder = (names) => `^src/(${names.join('|')})/`;

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `layer-${layer.join('-')}`,
  comment: `${layer.join(', ')} may import only from ${LAYERS.slice(0, i + 1).flat().join(', ')}`,
  severity: 'error',
  from: { path: folder(layer) },
  to: { path: [folder(LAYERS.slice(i + 1).flat()), '^src/[^/]+\\.ts$'] },
}));

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Modules in a cycle cannot be layered; break it by moving the shared part down.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...upward,
    {
      name: 'cli-only-from-main',
      comment: 'The command line is the top: only the binaries\' entry (src/main.ts) and src/cli itself import it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(main\\.ts|cli/)' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'cache-manager-only-from-app',
      comment: 'The layers above the cache read it through its roles (cacher/cache-roles.ts), never the manager: only src/app.ts, which makes it, imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(app\\.ts|cacher/)' },
      to: { path: '^src/cacher/cache-manager\\.ts$' },
    },
    {
      name: 'src-not-from-tests',
      comment: 'The product never imports the tests, the bench or the scripts.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'known-layer',
      comment: 'Every folder of src/ has a layer: add a new one to LAYERS.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: folder(LAYERS.flat()) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
