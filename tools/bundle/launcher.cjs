'use strict'
// The bin of a Keel server: runs the bundled server (./server.js) with a V8 code cache.
//
// Why: compiling the ~0.9 MB bundle is a large share of every start, and clients start servers
// often. The first run compiles normally and, on exit, stores V8's code cache in a per-user cache
// directory; later runs skip most of the compilation. The cache is keyed by the bundle's content
// hash (computed when it was built), its size and modification time, and the V8 version; V8
// itself rejects a cache that does not match, and any problem falls back to a plain require().
// KEEL_COMPILE_CACHE=0 turns it off; KEEL_COMPILE_CACHE_DIR moves it.
const fs = require('node:fs')
const path = require('node:path')

const bundle = path.join(__dirname, 'server.js')
// The bundle's dynamic imports (lazy dependencies) go through this: see tools/bundle/bundle.mjs.
globalThis.__keelImport = (specifier) => import(specifier)

function cacheDirectory() {
  if (process.env.KEEL_COMPILE_CACHE === '0') return undefined
  if (process.env.KEEL_COMPILE_CACHE_DIR) return process.env.KEEL_COMPILE_CACHE_DIR
  const os = require('node:os')
  const base =
    process.platform === 'win32'
      ? process.env.LOCALAPPDATA || path.join(os.homedir(), 'AppData', 'Local')
      : process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  return path.join(base, 'keel-mcp', 'v8')
}

// Only a directory that this user owns and no one else can write to may feed code to V8.
function privateDirectory(directory) {
  try {
    fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
    const stat = fs.statSync(directory)
    if (process.platform === 'win32') return stat.isDirectory()
    return stat.isDirectory() && stat.uid === process.getuid() && (stat.mode & 0o022) === 0
  } catch {
    return false
  }
}

// V8 rejects a code cache made under other V8 flags than the running ones. Core's run() sets the
// old generation's growing factor (packages/core/src/heap.ts: --heap-growing-percent=50, unless
// node was given one) once the server starts, after the bundle was compiled: the cache written at
// exit would then carry that flag and be rejected at every next start. So the launcher sets the
// same flag first, and the cache is made and used under the same flags. (The example server's
// tests start its bin twice and require a cache hit.)
const HEAP_GROWING_PERCENT = 50
if (!process.execArgv.some((argument) => /^--(no-)?heap[-_]growing[-_]percent(=|$)/.test(argument))) {
  try {
    require('node:v8').setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  } catch {}
}

// The SHA-256 of server.js, written in by the bundler (tools/bundle/bundle.mjs) when it builds
// this file. With it the launcher needs no node:crypto, which takes about 3 ms to load, at start.
const BUNDLE_SHA256 = '__KEEL_BUNDLE_SHA256__'

/** 32-bit FNV-1a of a short string, in hex. */
function fnv1a(text) {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++)
    hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193)
  return (hash >>> 0).toString(16).padStart(8, '0')
}

/**
 * The cache key: the bundle's content hash, V8's version, the architecture, and server.js's size
 * and modification time (a bundle edited after the build gets a key of its own). A launcher that
 * was not given the hash at build time hashes the source itself.
 */
function cacheKey(source) {
  const runtime = `${process.versions.v8}|${process.arch}`
  if (!/^[0-9a-f]{64}$/.test(BUNDLE_SHA256)) {
    return require('node:crypto')
      .createHash('sha256')
      .update(runtime)
      .update(source)
      .digest('hex')
      .slice(0, 32)
  }
  const stat = fs.statSync(bundle)
  const variant = `${runtime}|${stat.size}|${stat.mtimeMs}|${source.length}`
  return `${BUNDLE_SHA256.slice(0, 16)}${fnv1a(variant)}${fnv1a(`${variant}|${BUNDLE_SHA256}`)}`
}

/** Compiles the bundle with the code cache; returns a function that runs it, or undefined. */
function prepare() {
  const vm = require('node:vm')
  const directory = cacheDirectory()
  if (!directory || !privateDirectory(directory)) return undefined
  const Module = require('node:module')
  const source = fs.readFileSync(bundle, 'utf8')
  const key = cacheKey(source)
  const cacheFile = path.join(directory, `${key}.bin`)
  // Core keeps the server's tool schemas, as listed, next to the code (packages/core/src/schema-cache.ts).
  globalThis.__keelCache = { directory, key }
  // A cache written by a process that answered no tool call (core sets __keelCache.served when
  // one does) is marked thin by an empty file beside it: it lacks the functions that answer a
  // call, which every later start would compile again on its first call. The first process that
  // answers a call replaces it, once.
  const thinFile = `${cacheFile}.thin`
  let cachedData
  try {
    cachedData = fs.readFileSync(cacheFile)
  } catch {}
  const script = new vm.Script(Module.wrap(source), { filename: bundle, cachedData })
  // --help and --version compile little of the server: a cache from them would be a poor one.
  const serving = !process.argv.some((argument) => argument === '--help' || argument === '--version')
  const fresh = cachedData === undefined || script.cachedDataRejected
  if (serving && (fresh || fs.existsSync(thinFile))) {
    // Written at exit, so the cache also holds the functions compiled while serving. Not after a
    // failed run (a start refused for its configuration exits non-zero): that compiled little
    // beyond the refusal, and every later start would compile the serving path itself, lazily
    // (the Slack bin started 5.6 ms, 7 %, slower from a cache written by a start refused for an
    // unknown flag).
    process.once('exit', (code) => {
      if (code !== 0) return
      const served = globalThis.__keelCache.served === true
      if (!fresh && !served) return
      try {
        const temporary = `${cacheFile}.${process.pid}.tmp`
        fs.writeFileSync(temporary, script.createCachedData(), { mode: 0o600 })
        fs.renameSync(temporary, cacheFile)
        if (served) fs.rmSync(thinFile, { force: true })
        else fs.writeFileSync(thinFile, '', { mode: 0o600 })
      } catch {}
    })
  }
  if (process.env.KEEL_COMPILE_CACHE_DEBUG === '1') {
    const state = cachedData === undefined ? 'miss' : script.cachedDataRejected ? 'rejected' : 'hit'
    process.stderr.write(`keel compile cache: ${state}\n`)
  }
  const compiled = script.runInThisContext()
  return () => {
    const module = new Module(bundle, null)
    module.filename = bundle
    module.paths = Module._nodeModulePaths(__dirname)
    compiled.call(module.exports, module.exports, Module.createRequire(bundle), module, bundle, __dirname)
  }
}

let start
try {
  start = prepare()
} catch {
  // Anything unexpected while preparing the cache: run the bundle the ordinary way.
}
if (start) start()
else {
  if (process.env.KEEL_COMPILE_CACHE_DEBUG === '1') process.stderr.write('keel compile cache: off\n')
  require(bundle)
}
