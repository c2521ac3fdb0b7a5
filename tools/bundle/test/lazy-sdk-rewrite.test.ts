import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { lazyEraSchemas, lazySchemasModule, lazyServerSchemaImports } from '../lazy-sdk-schemas.mjs'

// zod as core resolves it (nothing in tools/bundle depends on zod).
const { z } = createRequire(new URL('../../../packages/core/package.json', import.meta.url))('zod')

// The rewrites of the SDK's schema code (lazy-sdk-schemas.mjs), on small modules of the same shape:
// what they build and when, and that a shape they do not expect fails the build.

/** Runs module text whose only import is zod's namespace; returns what `names` hold. */
function evaluate(source: string, names: string[]) {
  let built = 0
  const counting = Object.fromEntries(
    Object.entries(z).map(([key, value]) => [
      key,
      typeof value === 'function'
        ? (...args: unknown[]) => {
            built++
            return (value as (...args: unknown[]) => unknown)(...args)
          }
        : value,
    ]),
  )
  const body = source.replace(/^import \* as z from "zod\/v4";\n/m, '')
  const exported = new Function('z', `${body}\nreturn { ${names.join(', ')} }`)(counting)
  return { exported, built: () => built }
}

const ERA = `import * as z from "zod/v4";
function build$1() {
	const IdSchema$1 = z.union([z.string(), z.number()]);
	const PingSchema$1 = z.object({ id: IdSchema$1, method: z.literal("ping") });
	const NodeSchema$1 = z.lazy(() => z.object({ children: z.array(NodeSchema$1) }));
	return {
		PingSchema: PingSchema$1,
		NodeSchema: NodeSchema$1,
		BothSchema: z.union([PingSchema$1, NodeSchema$1])
	};
}
let memo$1;
function buildSchemas2025() {
	return memo$1 ??= build$1();
}
let maps$1;
function registryMaps() {
	if (maps$1) return maps$1;
	const s = buildSchemas2025();
	maps$1 = { requestSchemas: { ping: s.PingSchema, node: s.NodeSchema } };
	return maps$1;
}
`

describe('the era schema rewrite', () => {
  it('builds each schema on first read, once, with the schemas it is made of', () => {
    const { exported, built } = evaluate(lazyEraSchemas('era.mjs', ERA), ['buildSchemas2025', 'registryMaps'])
    const maps = exported.registryMaps()
    expect(Object.keys(maps.requestSchemas)).toEqual(['ping', 'node'])
    expect(built()).toBe(0)
    const ping = maps.requestSchemas.ping
    expect(ping.safeParse({ id: 1, method: 'ping' }).success).toBe(true)
    expect(ping.safeParse({ id: true, method: 'ping' }).success).toBe(false)
    const afterPing = built()
    expect(afterPing).toBeGreaterThan(0)
    // The same object at every read, from the maps and from the set.
    expect(exported.buildSchemas2025().PingSchema).toBe(ping)
    expect(maps.requestSchemas.ping).toBe(ping)
    expect(built()).toBe(afterPing)
    // A recursive schema still refers to itself; a returned union of two is built from the same two.
    const node = exported.buildSchemas2025().NodeSchema
    expect(node.safeParse({ children: [{ children: [] }] }).success).toBe(true)
    expect(exported.buildSchemas2025().BothSchema.def.options).toEqual([ping, node])
  })

  it('fails the build on a shape it does not expect', () => {
    expect(() => lazyEraSchemas('era.mjs', ERA.replace('const IdSchema$1', 'let IdSchema$1'))).toThrow(
      /the SDK changed/,
    )
    expect(() =>
      lazyEraSchemas('era.mjs', ERA.replace('z.union([z.string(), z.number()])', 'makeId()')),
    ).toThrow(/other than zod/)
    expect(() =>
      lazyEraSchemas(
        'era.mjs',
        ERA.replace('z.array(NodeSchema$1)', '((IdSchema$1) => IdSchema$1)(z.string())'),
      ),
    ).toThrow(/declares IdSchema\$1 again/)
    expect(() =>
      lazyEraSchemas('era.mjs', ERA.replace('return memo$1 ??= build$1();', 'return build$1();')),
    ).toThrow(/not a memo/)
  })
})

const SCHEMAS = `import * as z from "zod/v4";
const VERSION = "2025-11-25";
const VERSIONS = [VERSION, "2025-06-18"];
const IdSchema = z.union([z.string(), z.number()]);
const RequestSchema = z.object({ id: IdSchema, method: z.string() });
const AliasSchema = RequestSchema;
export { AliasSchema as a, IdSchema as i, RequestSchema as r, VERSION as v, VERSIONS as w };
`

describe('the protocol schemas rewrite', () => {
  it('makes the zod schemas thunks exported under names of their own, and leaves constants', () => {
    const { contents, lazyExports } = lazySchemasModule('schemas.mjs', SCHEMAS, { minimum: 3 }) as {
      contents: string
      lazyExports: Set<string>
    }
    expect([...lazyExports].sort()).toEqual(['a', 'i', 'r'])
    expect(contents).toContain('RequestSchema as r__keelLazy')
    expect(contents).toContain('VERSION as v,')
    const { exported, built } = evaluate(contents.replace(/^export .*$/m, ''), [
      'IdSchema',
      'RequestSchema',
      'AliasSchema',
      'VERSIONS',
    ])
    expect(exported.VERSIONS).toEqual(['2025-11-25', '2025-06-18'])
    expect(built()).toBe(0)
    expect(exported.AliasSchema()).toBe(exported.RequestSchema())
    expect(exported.RequestSchema().shape.id).toBe(exported.IdSchema())
  })

  it('rewrites the server module: calls, exports built, spec types read on use', () => {
    const server = `import { IdSchema, VERSION } from "@modelcontextprotocol/core/internal";
const SPEC_SCHEMA_KEYS = ["IdSchema"];
var schemas_exports = { IdSchema: () => IdSchema };
const _specTypeSchemas = {};
const _isSpecType = {};
function register(key, schema) {
	const name = key.slice(0, -6);
	_specTypeSchemas[name] = schema;
	_isSpecType[name] = (v) => schema.safeParse(v).success;
}
for (const key of SPEC_SCHEMA_KEYS) register(key, schemas_exports[key]);
function check(value) { return { IdSchema }.IdSchema.safeParse(value).success }
export { IdSchema as i, VERSION as v, check as c };
`
    const out = lazyServerSchemaImports('server.mjs', server, new Set(['IdSchema'])) as string
    expect(out).toContain('import { IdSchema__keelLazy as IdSchema, VERSION }')
    expect(out).toContain('var schemas_exports = { IdSchema: () => IdSchema() }')
    expect(out).toContain('{ IdSchema: IdSchema() }.IdSchema')
    expect(out).toContain('const __keelLazyBuilt_IdSchema = IdSchema();')
    expect(out).toContain('__keelLazyBuilt_IdSchema as i')
    expect(out).toContain('get: () => schemas_exports[key]')
    expect(() =>
      lazyServerSchemaImports(
        'server.mjs',
        server.replace('function check(value)', 'function check(IdSchema)'),
        new Set(['IdSchema']),
      ),
    ).toThrow(/declared again/)
  })

  it('computes constants made from a schema at evaluation on first use, once', () => {
    const server = `import { IdSchema, FormSchema } from "@modelcontextprotocol/core/internal";
const SPEC_SCHEMA_KEYS = [];
var schemas_exports = {};
for (const key of SPEC_SCHEMA_KEYS) register(key, schemas_exports[key]);
const PLAIN = new Set(["a"]);
const KEYS = new Set(["$schema", ...Object.keys(FormSchema.shape)]);
const BY_TYPE = { id: KEYS, both: [...KEYS, ...PLAIN] };
const LATER = () => IdSchema;
function allowed(key) { return KEYS.has(key) && Object.hasOwn(BY_TYPE, "id") }
export { allowed as a, LATER as l };
`
    const out = lazyServerSchemaImports('server.mjs', server, new Set(['IdSchema', 'FormSchema'])) as string
    // The two constants read a schema (or such a constant) when evaluated: thunks, memoized.
    expect(out).toContain('let __keelLazyDerived0, __keelLazyDerived1;')
    expect(out).toContain(
      'const KEYS = () => (__keelLazyDerived0 ??= (new Set(["$schema", ...Object.keys(FormSchema().shape)])))',
    )
    expect(out).toContain(
      'const BY_TYPE = () => (__keelLazyDerived1 ??= ({ id: KEYS(), both: [...KEYS(), ...PLAIN] }))',
    )
    expect(out).toContain('return KEYS().has(key) && Object.hasOwn(BY_TYPE(), "id")')
    // A constant that reads a schema only inside a function, or no schema at all, is left alone.
    expect(out).toContain('const PLAIN = new Set(["a"]);')
    expect(out).toContain('const LATER = () => IdSchema();')
    // Evaluated, it builds nothing until used, then the same sets at every use.
    let built = 0
    const body = out
      .replace(/^import .*\n/m, '')
      .replace(/^for \(const key of SPEC_SCHEMA_KEYS\) \{[\s\S]*?\n\}\n/m, '')
      .replace(/^export .*$/m, 'return { allowed, KEYS }')
    const FormSchema = () => {
      built++
      return { shape: { type: 1, properties: 2 } }
    }
    const module = new Function('FormSchema', 'IdSchema', body)(FormSchema, () => ({}))
    expect(built).toBe(0)
    expect(module.allowed('properties')).toBe(true)
    expect(module.allowed('other')).toBe(false)
    expect(module.KEYS()).toBe(module.KEYS())
    expect(built).toBe(1)
    // Exporting such a constant fails the build: its importers would receive a thunk.
    expect(() =>
      lazyServerSchemaImports(
        'server.mjs',
        server.replace('export { allowed as a', 'export { KEYS as k, allowed as a'),
        new Set(['IdSchema', 'FormSchema']),
      ),
    ).toThrow(/computed from a schema, is exported/)
  })
})
