import { createRequire } from 'node:module'

/**
 * Loads a runtime dependency on first use, with require() (pg and libpg-query both ship
 * CommonJS). Not import(): the bundled bin is CommonJS and may run from a V8 code cache, and on
 * Node 20 functions restored from a code cache lose their dynamic-import callback, so a lazy
 * import() there fails with ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING. require() has no such hook.
 */
export function loadDependency<T>(name: 'pg' | 'libpg-query'): T {
  return createRequire(import.meta.url)(name) as T
}

/**
 * pg's own wire-protocol serializer, resolved from pg's location (it is pg's dependency, not ours,
 * and must be the copy pg uses).
 */
export function loadPgProtocol<T>(): T {
  const require = createRequire(import.meta.url)
  return createRequire(require.resolve('pg'))('pg-protocol') as T
}
