#!/usr/bin/env node
// Bundles src/index.ts of the package in the current directory into dist/server.js, with the
// launcher dist/index.js (the bin) in front of it.
//
// Why: a user starts a server on every client launch. Resolving and compiling hundreds of SDK
// modules costs far more than one pre-linked file, so each bin ships as a single file with
// @keel-mcp/core, the MCP SDK and zod inlined. It is CommonJS on purpose: in a CJS bundle every
// module, including the Node built-ins it requires, initialises only when first used, so a stdio
// server never loads the HTTP stack (node:http, tls, http2) that it does not serve. Runtime
// dependencies listed in the package's `dependencies` stay external (loaded lazily, e.g. pg or
// puppeteer) unless the package names them in `keel.bundle`. Sources stay ESM; only the bin is CJS
// (dist/package.json says so, so the bin path stays dist/index.js).
import { createHash } from 'node:crypto'
import { chmod, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { build, formatMessages } from 'esbuild'
import {
  lazyAuthSchemas,
  lazyEraSchemas,
  lazyInternal,
  lazySchemasModule,
  lazyServerSchemaImports,
} from './lazy-sdk-schemas.mjs'

const root = process.cwd()
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
// V8 flags the bin sets before it compiles the bundle (launcher.cjs): `keel.v8Flags`, each one
// `--name` or `--name=value`.
const v8Flags = pkg.keel?.v8Flags ?? []
if (!Array.isArray(v8Flags) || !v8Flags.every((flag) => /^--[a-z0-9_-]+(=[\w.:-]+)?$/.test(flag)))
  throw new Error(
    `keel.v8Flags must be a list of V8 flags like "--name" or "--name=value": ${JSON.stringify(v8Flags)}`,
  )
const inline = new Set(['@keel-mcp/core', 'zod', ...(pkg.keel?.bundle ?? [])])
const external = Object.keys(pkg.dependencies ?? {}).filter((name) => !inline.has(name))
// The bin's entry is bundled as dist/server.js; dist/index.js is the launcher that runs it with a
// V8 code cache (launcher.cjs). Other entries (keel.entries) are bundled as they are named.
const { index: binEntry = 'src/index.ts', ...otherEntries } = pkg.keel?.entries ?? {}
const entries = { server: binEntry, ...otherEntries }

// Clients of core features that few users turn on (Redis scale-out, OAuth token checks) are
// bundled into files of their own, dist/vendor/<name>.js, loaded only when the feature starts:
// every start of every server would otherwise parse them (about 0.2 MB, ~5 % of a cold start).
const vendorLibraries = ['ioredis', 'jose']
// vendor file name → { specifier it is built from, the directory Node would resolve it from }
const vendored = new Map()
// Code the bin reaches only through a lazy loader (the SDK's JSON Schema validator, zod's
// non-English locales) is required as `keel-vendor:<name>` and built into dist/vendor/<name>.js
// from `specifier`; see lazyShims and lazyLocales below.
const VENDOR_PREFIX = 'keel-vendor:'
const vendorPlugin = {
  name: 'keel-vendor',
  setup(builder) {
    const filter = new RegExp(`^(${vendorLibraries.join('|')})$`)
    builder.onResolve({ filter }, (args) => {
      if (!vendored.has(args.path))
        vendored.set(args.path, { specifier: args.path, resolveDir: args.resolveDir })
      return { path: `./vendor/${args.path}.js`, external: true }
    })
    // A module of core's own named `*.vendor.js` (the OpenTelemetry SDK) is also a vendor file:
    // what it imports is parsed only by the processes that load it.
    builder.onResolve({ filter: /\.vendor\.js$/ }, (args) => {
      const name = args.path.split('/').pop().replace(/\.js$/, '')
      if (!vendored.has(name)) vendored.set(name, { specifier: args.path, resolveDir: args.resolveDir })
      return { path: `./vendor/${name}.js`, external: true }
    })
    builder.onResolve({ filter: /^keel-vendor:/ }, (args) => {
      const name = args.path.slice(VENDOR_PREFIX.length)
      if (!vendored.has(name)) vendored.set(name, args.pluginData)
      return { path: `./vendor/${name}.js`, external: true }
    })
  },
}

await rm(join(root, 'dist'), { recursive: true, force: true })
// The SDK's Node shim (`@modelcontextprotocol/server/_shims`, the subpath the SDK resolves per
// runtime) hands out its default JSON Schema validator, and importing it evaluates ajv, ajv's 2019
// and 2020 dialects and ajv-formats: about a hundred modules (0.16 MB minified), a sizeable share
// of every start, although a server validates against a JSON Schema only when an elicitation
// answer comes back. The bin gets the same shim with that validator made lazy: the SDK's own
// class, loaded from dist/vendor/sdk-validator.js on its first getValidator() (same engine, same
// options, same results).
const SHIMS = '@modelcontextprotocol/server/_shims'
const lazyShims = {
  name: 'keel-lazy-shims',
  setup(builder) {
    builder.onResolve({ filter: /^@modelcontextprotocol\/server\/_shims$/ }, (args) =>
      args.namespace === 'keel-shims'
        ? undefined
        : { path: SHIMS, namespace: 'keel-shims', pluginData: { resolveDir: args.resolveDir } },
    )
    builder.onLoad({ filter: /.*/, namespace: 'keel-shims' }, (args) => ({
      resolveDir: args.pluginData.resolveDir,
      pluginData: { specifier: SHIMS, resolveDir: args.pluginData.resolveDir },
      loader: 'js',
      contents: `import process from 'node:process'
let Validator
export class DefaultJsonSchemaValidator {
  #engine
  #args
  constructor(...args) {
    this.#args = args
  }
  getValidator(schema) {
    Validator ??= require('${VENDOR_PREFIX}sdk-validator').DefaultJsonSchemaValidator
    this.#engine ??= new Validator(...this.#args)
    return this.#engine.getValidator(schema)
  }
}
export { process }
`,
    }))
  },
}

// zod's `locales` namespace (`z.locales.de()` …, for `z.config()`) holds every translation of its
// error messages: 0.27 MB minified, more than a quarter of the bin, evaluated at every start
// although zod itself uses only English, its default. The bin keeps English inline; every other
// locale is a function that loads the same zod locale from dist/vendor/zod-locales.js on its
// first call and returns what it returns.
const lazyLocales = {
  name: 'keel-lazy-locales',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8')
      const names = [...source.matchAll(/export \{ default as (\w+) \} from "\.\/([\w-]+)\.js";/g)]
      if (!names.some(([, name]) => name === 'en'))
        throw new Error(`unexpected zod locales index: ${args.path}`)
      const lines = [`let all`, `const load = () => (all ??= require('${VENDOR_PREFIX}zod-locales'))`]
      for (const [, name, file] of names) {
        lines.push(
          name === 'en'
            ? `export { default as en } from './${file}.js'`
            : `export function ${name}(...args) { return load().${name}(...args) }`,
        )
      }
      return {
        contents: lines.join('\n'),
        loader: 'js',
        resolveDir: dirname(args.path),
        pluginData: { specifier: args.path, resolveDir: dirname(args.path) },
      }
    })
  },
}

// zod compiles a parser for each object schema (`new Function`) on the schema's first parse, code
// that the V8 code cache cannot keep (50-130 µs a schema at start). At every start the schemas of
// the options, the handshake and the first messages are parsed once or a few times each, and pay
// for a compiler that does not pay back. The bin's copy compiles it on a schema's eighth parse
// instead (JIT_AFTER_PARSES); the parses before take zod's own path without the compiled parser
// (the one `z.config({ jitless: true })` uses), which gives the same results. The build fails if
// zod's code no longer has the shape this rewrite expects.
const JIT_AFTER_PARSES = 8
const JIT_FIRST_PARSE = `            if (!fastpass)
                fastpass = generateFastpass(def.shape);
`
const JIT_LATER_PARSE = `            if (!fastpass) {
                if (++parsesBeforeJit < ${JIT_AFTER_PARSES})
                    return superParse(payload, ctx);
                fastpass = generateFastpass(def.shape);
            }
`
const lazyZodJit = {
  name: 'keel-lazy-zod-jit',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]core[\\/]schemas\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8')
      const declared = '    let fastpass;\n'
      if (source.split(JIT_FIRST_PARSE).length !== 2 || source.split(declared).length !== 2)
        throw new Error(`lazy zod JIT: unexpected shape of ${args.path}`)
      return {
        contents: source
          .replace(declared, `${declared}    let parsesBeforeJit = 0;\n`)
          .replace(JIT_FIRST_PARSE, JIT_LATER_PARSE),
        loader: 'js',
        resolveDir: dirname(args.path),
      }
    })
  },
}

// Parts of the SDK built at start that a handshake does not need, each built on first use in the
// bin's copy (lazy-sdk-schemas.mjs): the server's 2025-era wire schemas (about 750, all built on a
// connection's first message though a handshake reads a handful), core's protocol schemas (about
// 800, evaluated with the module and registered in specTypeSchemas) and its OAuth schemas (about
// 270, registered likewise). The build fails if the SDK no longer has the shape these rewrites
// expect. A bundle that also holds code importing those schemas by name (the SDK's client, in a
// test bin) keeps the protocol and OAuth schemas eager: the first build fails on exactly those
// imports, and the bin is built again without that part.
let eraSchemasRewritten = 0
const SCHEMAS_MODULE = /^\.\/schemas-[\w-]+\.mjs$/
const sdkModules = new Map()
/** Every name the deferred parts stop exporting under its usual name (for the retry below). */
const deferredNames = new Set()
const lazySdkSchemas = (deferAll) => ({
  name: 'keel-lazy-sdk-schemas',
  setup(builder) {
    const once = async (key, make) => {
      if (!sdkModules.has(key)) sdkModules.set(key, await make())
      return sdkModules.get(key)
    }
    const schemasModule = (path) =>
      once(path, async () => lazySchemasModule(path, await readFile(path, 'utf8')))
    const internalModule = (path) =>
      once(path, async () => {
        const source = await readFile(path, 'utf8')
        const schemasPath = [...source.matchAll(/from "(\.\/schemas-[\w-]+\.mjs)"/g)].map((match) => match[1])
        if (new Set(schemasPath).size !== 1 || !SCHEMAS_MODULE.test(schemasPath[0]))
          throw new Error(`lazy SDK schemas: ${path} does not import one schemas module`)
        const { lazyExports } = await schemasModule(join(dirname(path), schemasPath[0]))
        const internal = lazyInternal(path, source, {
          deferAuth: true,
          schemas: { path: schemasPath[0], lazyExports },
        })
        for (const name of [...lazyExports, ...internal.lazyNames, ...internal.authNames.keys()])
          deferredNames.add(name)
        return { ...internal, authPath: join(dirname(path), internal.authPath) }
      })
    if (deferAll) {
      builder.onLoad(
        { filter: /[\\/]@modelcontextprotocol[\\/]core[\\/]dist[\\/]internal\.mjs$/ },
        async (args) => ({
          contents: (await internalModule(args.path)).contents,
          loader: 'js',
          resolveDir: dirname(args.path),
        }),
      )
      builder.onLoad(
        { filter: /[\\/]@modelcontextprotocol[\\/]core[\\/]dist[\\/]schemas-[\w-]+\.mjs$/ },
        async (args) => ({
          contents: (await schemasModule(args.path)).contents,
          loader: 'js',
          resolveDir: dirname(args.path),
        }),
      )
    }
    builder.onLoad(
      { filter: /[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/][\w-]+\.mjs$/ },
      async (args) => {
        const source = await readFile(args.path, 'utf8')
        if (!source.includes('function buildSchemas2025(')) return undefined
        eraSchemasRewritten++
        let contents = lazyEraSchemas(args.path, source)
        if (deferAll) {
          const resolved = await builder.resolve('@modelcontextprotocol/core/internal', {
            resolveDir: dirname(args.path),
            kind: 'import-statement',
          })
          if (resolved.errors.length > 0) throw new Error(resolved.errors[0].text)
          const internal = await internalModule(resolved.path)
          contents = lazyAuthSchemas(args.path, contents, internal.authPath, internal.authNames)
          contents = lazyServerSchemaImports(args.path, contents, internal.lazyNames)
        }
        return { contents, loader: 'js', resolveDir: dirname(args.path) }
      },
    )
  },
})

/** True when every error of a failed build is an import of a schema the deferred parts renamed. */
function importsDeferredSchemas(error) {
  return (
    Array.isArray(error?.errors) &&
    error.errors.length > 0 &&
    error.errors.every((message) => {
      const match =
        /^No matching export in ".*[\\/]@modelcontextprotocol[\\/]core[\\/]dist[\\/][\w-]+\.mjs" for import "([\w$]+)"$/.exec(
          message.text,
        )
      return match !== null && deferredNames.has(match[1])
    })
  )
}

const bundleWith = (deferAll) =>
  build({
    absWorkingDir: root,
    entryPoints: entries,
    outdir: 'dist',
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external,
    // Workspace packages export their TypeScript sources under this condition (see vitest.shared.ts):
    // a server bundles core from source, so a fresh clone needs no build of core first.
    conditions: ['keel-source'],
    splitting: false,
    // Smaller source compiles faster at every start; stacks stay readable enough for the logs.
    minify: true,
    legalComments: 'linked',
    metafile: true,
    plugins: [vendorPlugin, lazyShims, lazyLocales, lazyZodJit, lazySdkSchemas(deferAll)],
    // The first attempt reports its warnings below; its errors go with the error it throws.
    logLevel: deferAll ? 'silent' : 'warning',
    // import.meta.url has no CJS counterpart; give the inlined ESM code one.
    define: { 'import.meta.url': '__keelImportMetaUrl' },
    banner: { js: "const __keelImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  })
let result
try {
  result = await bundleWith(true)
  for (const warning of await formatMessages(result.warnings, { kind: 'warning', color: false }))
    process.stderr.write(warning)
} catch (error) {
  if (!importsDeferredSchemas(error)) throw error
  eraSchemasRewritten = 0
  result = await bundleWith(false)
}
const bundlesSdkServer = Object.keys(result.metafile.inputs).some((input) =>
  /[\\/]@modelcontextprotocol[\\/]server[\\/]dist[\\/]/.test(input),
)
if (bundlesSdkServer && eraSchemasRewritten === 0)
  throw new Error('lazy SDK schemas: the SDK server was bundled but no module defines buildSchemas2025()')
// Each vendored client, bundled alone from where the package that imports it resolves it.
for (const [name, { specifier, resolveDir }] of vendored) {
  await build({
    absWorkingDir: root,
    stdin: { contents: `module.exports = require(${JSON.stringify(specifier)})`, resolveDir, loader: 'js' },
    outfile: join('dist', 'vendor', `${name}.js`),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    legalComments: 'linked',
    logLevel: 'warning',
  })
}
await writeFile(join(root, 'dist', 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`)
// A hashbang is only valid at the very start of a script; the launcher wraps server.js in a function.
const serverFile = join(root, 'dist', 'server.js')
let server = await readFile(serverFile, 'utf8')
if (server.startsWith('#!')) server = server.slice(server.indexOf('\n') + 1)
// Lazy dependencies are loaded with import(). Code that V8 restores from a code cache loses the
// dynamic-import hook on Node 20, so the bundle calls the launcher's import() instead: a global
// the launcher defines (and Node's own resolution from dist/ applies, as before).
server = server.replace(/\bimport\((?=["'`])/g, '__keelImport(')
await writeFile(serverFile, server)
const launcher = (await readFile(new URL('./launcher.cjs', import.meta.url), 'utf8'))
  .replace('__KEEL_BUNDLE_SHA256__', createHash('sha256').update(server).digest('hex'))
  .replace('[] /* __KEEL_V8_FLAGS__ */', JSON.stringify(v8Flags))
await writeFile(join(root, 'dist', 'index.js'), `#!/usr/bin/env node\n${launcher}`, { mode: 0o755 })
for (const file of Object.keys(result.metafile.outputs)) {
  if (file.endsWith('.js')) await chmod(join(root, file), 0o755)
}
