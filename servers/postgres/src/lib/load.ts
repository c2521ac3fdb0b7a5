import { createRequire } from 'node:module'

/**
 * Loads a runtime dependency on first use, with require() (pg and libpg-query both ship
 * CommonJS). Not import(): the bundled bin is CommonJS and may run from a V8 code cache, and on
 * Node 20 functions restored from a code cache lose their dynamic-import callback, so a lazy
 * import() there fails with ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING. require() has no such hook.
 */
export function loadDependency<T>(name: 'pg' | 'libpg-query'): T {
  const require = createRequire(import.meta.url)
  return (name === 'pg' ? withNavigator(() => require(name)) : require(name)) as T
}

/**
 * Runs `load` with a `navigator` like the one Node 21 and later define, when there is none (Node
 * 20). pg asks once, while it loads, whether it runs on Cloudflare Workers: with no
 * `navigator.userAgent` to read, it builds a `Response`, and that loads Node's whole fetch
 * implementation (undici), tens of milliseconds of a start that never uses it. Removed again at
 * once: nothing else runs while a module loads.
 */
function withNavigator<T>(load: () => T): T {
  if ('navigator' in globalThis) return load()
  Object.defineProperty(globalThis, 'navigator', {
    value: { userAgent: `Node.js/${process.versions.node.split('.')[0]}` },
    configurable: true,
    writable: true,
  })
  try {
    return load()
  } finally {
    delete (globalThis as { navigator?: unknown }).navigator
  }
}

/**
 * pg's own wire-protocol serializer, resolved from pg's location (it is pg's dependency, not ours,
 * and must be the copy pg uses).
 */
export function loadPgProtocol<T>(): T {
  const require = createRequire(import.meta.url)
  return createRequire(require.resolve('pg'))('pg-protocol') as T
}
