import { z } from 'zod'
import { budgetOutput, useAnswerCap } from './budget.js'
import { ConfigError, type ParsedConfig } from './config.js'
import { type AnyTool, type ServerSpec, type Shape, shapeOf } from './define.js'
import type { SchemaCache } from './schema-cache.js'

// How tools are listed: one JSON Schema per tool, built once per process; and which tools a
// process serves after toolsets, read-only and allow/deny lists.

export interface ToolPlan {
  tool: AnyTool
  schema: z.ZodObject
  output: z.ZodObject | undefined
  listed: Record<string, unknown>
  /** `listed` with `execution.taskSupport`, for connections that offer tasks. */
  listedWithTasks: Record<string, unknown>
  outputJson: Record<string, unknown> | undefined
}

const plans = new WeakMap<AnyTool, ToolPlan>()

/** Where this process keeps listed schemas between starts (see schema-cache.ts); set once by `prepare`. */
let schemaCache: SchemaCache | undefined
export function useSchemaCache(cache: SchemaCache | undefined): void {
  schemaCache = cache
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>
  return (io === 'input' ? compactInput(json) : compactOutput(json)) as Record<string, unknown>
}

// Every word of tools/list is paid for in every conversation, so schemas are emitted compact,
// keeping their meaning. Both walks visit schema positions only (never a property *named*
// `description` or `default`).

type Node = Record<string, unknown>
const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Applies `visit` to each sub-schema of `node` (properties, items, combinators, definitions). */
function mapSchema(node: Node, visit: (child: unknown) => unknown): Node {
  const out: Node = { ...node }
  for (const key of ['properties', '$defs', 'definitions'] as const) {
    const map = node[key]
    if (isNode(map))
      out[key] = Object.fromEntries(Object.entries(map).map(([name, child]) => [name, visit(child)]))
  }
  for (const key of ['items', 'additionalProperties', 'not'] as const) {
    if (isNode(node[key])) out[key] = visit(node[key])
  }
  for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const) {
    const list = node[key]
    if (Array.isArray(list)) out[key] = list.map(visit)
  }
  return out
}

/**
 * Input: the arguments the model writes, so descriptions, defaults, bounds and every `type` stay
 * (some model APIs that clients translate schemas for require a `type` beside an `enum`). Dropped:
 * `$schema`, the ±(2^53-1) bounds of `.int()`.
 */
function compactInput(node: unknown): unknown {
  if (!isNode(node)) return node
  const out = simplify(mapSchema(node, compactInput), { keepTypes: true })
  delete out.$schema
  // Core refuses unknown arguments itself, naming them: the schema need not say it again.
  if (out.additionalProperties === false) delete out.additionalProperties
  if (out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum
  if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum
  if (isNode(out.properties)) {
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([name, child]) => [name, withoutEcho(name, child)]),
    )
  }
  return out
}

/**
 * A description that only repeats the argument's name, or its last words (`per_page`: "Per page",
 * `merge_method`: "Method", `include_patch`: "Include patches"), says nothing the name does not.
 */
function withoutEcho(name: string, schema: unknown): unknown {
  if (!isNode(schema) || typeof schema.description !== 'string') return schema
  const words = (text: string) =>
    text
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter(Boolean)
      .map((word) => word.replace(/(es|s)$/, ''))
  const said = words(schema.description)
  const named = words(name)
  if (!said.length || said.join(' ') !== named.slice(-said.length).join(' ')) return schema
  const { description: _, ...rest } = schema
  return rest
}

/** Keywords an output schema keeps: the shape (types, nesting, required keys, enums). */
const OUTPUT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'items',
  'prefixItems',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf',
  'not',
  'additionalProperties',
  '$ref',
  '$defs',
  'definitions',
])

/**
 * Output: the shape of `structuredContent`, which the tool's description already explains.
 * Dropped: descriptions, defaults, formats and bounds (the server checks its own results), and
 * `additionalProperties: false` (a client validating a result loses nothing by it). Records keep
 * their value schema.
 */
function compactOutput(node: unknown): unknown {
  if (!isNode(node)) return node
  const out: Node = {}
  for (const [key, value] of Object.entries(mapSchema(node, compactOutput))) {
    if (!OUTPUT_KEYWORDS.has(key)) continue
    // `additionalProperties: {}` (a loose object) allows what an absent keyword allows.
    if (key === 'additionalProperties' && (!isNode(value) || !Object.keys(value).length)) continue
    if (key === 'properties' && isNode(value) && !Object.keys(value).length) continue
    out[key] = value
  }
  return simplify(out, { keepTypes: false })
}

const typeOfValue = (value: unknown) =>
  value === null ? 'null' : Number.isInteger(value) ? 'integer' : typeof value

/**
 * `anyOf: [X, {type: 'null'}]` → X made nullable; unless `keepTypes`, `type` beside an `enum` of
 * that type dropped (the enum says it).
 */
function simplify(node: Node, { keepTypes }: { keepTypes: boolean }): Node {
  let out = node
  const anyOf = out.anyOf
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const nullAt = anyOf.findIndex(
      (branch) => isNode(branch) && branch.type === 'null' && Object.keys(branch).length === 1,
    )
    const other = anyOf[1 - nullAt]
    if (nullAt !== -1 && isNode(other) && !('anyOf' in other) && !('$ref' in other)) {
      const { anyOf: _, ...rest } = out
      const type = other.type === undefined ? {} : { type: [...new Set([other.type, 'null'].flat())] }
      if (Array.isArray(other.enum)) {
        out = { ...rest, ...other, ...type, enum: [...other.enum, null] }
      } else if (typeof other.type === 'string' || Array.isArray(other.type)) {
        out = { ...rest, ...other, ...type }
      }
    }
  }
  if (!keepTypes && Array.isArray(out.enum) && out.type !== undefined) {
    const types = [out.type].flat()
    const matches = out.enum.every((value) => {
      const actual = typeOfValue(value)
      return types.includes(actual) || (actual === 'integer' && types.includes('number'))
    })
    if (matches) {
      const { type: _, ...rest } = out
      out = rest
    }
  }
  return Array.isArray(out.type) ? splitTypes(out) : out
}

/** Keywords that constrain only values of these types (JSON Schema 2020-12, validation vocabulary). */
const KEYWORD_TYPES: Record<string, string[]> = {
  minLength: ['string'],
  maxLength: ['string'],
  pattern: ['string'],
  format: ['string'],
  contentEncoding: ['string'],
  contentMediaType: ['string'],
  minimum: ['number', 'integer'],
  maximum: ['number', 'integer'],
  exclusiveMinimum: ['number', 'integer'],
  exclusiveMaximum: ['number', 'integer'],
  multipleOf: ['number', 'integer'],
  items: ['array'],
  prefixItems: ['array'],
  contains: ['array'],
  minItems: ['array'],
  maxItems: ['array'],
  uniqueItems: ['array'],
  properties: ['object'],
  required: ['object'],
  additionalProperties: ['object'],
  patternProperties: ['object'],
  propertyNames: ['object'],
  minProperties: ['object'],
  maxProperties: ['object'],
}
/** Keywords about the whole value (what it means), kept beside the branches. */
const ANNOTATIONS = new Set([
  'description',
  'title',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
])

const fitsType = (value: unknown, type: string) => {
  const actual = typeOfValue(value)
  return actual === type || (actual === 'integer' && type === 'number')
}

/**
 * `type: [a, b]` → `anyOf: [{type: a, …}, {type: b, …}]`, the same set of values: each branch keeps
 * the keywords that constrain its type and the `enum`/`const` values of its type. A type list is
 * legal JSON Schema, but clients that map tool schemas onto a single-`type` dialect (the OpenAPI
 * subset some model APIs take) reject or loosen it; `anyOf` of single types is the portable form.
 */
function splitTypes(node: Node): Node {
  const types = [...new Set(node.type as string[])]
  if (types.length === 1) return { ...node, type: types[0] }
  const outer: Node = {}
  const shared: Node = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === 'type') continue
    if (ANNOTATIONS.has(key)) outer[key] = value
    else shared[key] = value
  }
  const branches: Node[] = []
  for (const type of types) {
    const branch: Node = { type }
    let possible = true
    for (const [key, value] of Object.entries(shared)) {
      if (key === 'enum' && Array.isArray(value)) {
        const values = value.filter((item) => fitsType(item, type))
        if (!values.length) possible = false
        else if (type !== 'null') branch.enum = values
      } else if (key === 'const') {
        if (!fitsType(value, type)) possible = false
        else if (type !== 'null') branch.const = value
      } else if (!KEYWORD_TYPES[key] || KEYWORD_TYPES[key].includes(type)) {
        branch[key] = value
      }
    }
    if (possible) branches.push(branch)
  }
  return { anyOf: branches, ...outer }
}

/**
 * Annotations as the spec reads them, with what a client needs to judge a tool always present:
 * a reader carries `readOnlyHint: true`; a writer always carries `destructiveHint` (true or false),
 * so every tool lists annotations and a destructive one says so outright. `idempotentHint` is listed
 * only for writers that are idempotent (the spec gives it no meaning on a read-only tool and
 * defaults it to false), `openWorldHint` only when false (its default is true). An absent hint
 * means the cautious default. The title is the tool's own `title`, not repeated here.
 */
export function compactAnnotations(annotations: AnyTool['annotations']): Record<string, boolean> {
  const out: Record<string, boolean> = {}
  if (annotations.readOnlyHint) out.readOnlyHint = true
  else {
    out.destructiveHint = annotations.destructiveHint !== false
    if (annotations.idempotentHint === true) out.idempotentHint = true
  }
  if (annotations.openWorldHint === false) out.openWorldHint = false
  return out
}

/**
 * The title to list: none when it only restates the name (`read_text_file`: "Read text file"), which
 * is what a client shows without one; a title that says more ("Run a read-only SQL query") is kept.
 * A tool written in plain JavaScript may have none (the types ask for one): none is listed.
 */
export function listedTitle(name: string, title: string | undefined): string | undefined {
  if (typeof title !== 'string') return undefined
  const words = (text: string) =>
    text
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter(Boolean)
      .join(' ')
  return words(title) === words(name) ? undefined : title
}

export function planFor(tool: AnyTool): ToolPlan {
  let plan = plans.get(tool)
  if (!plan) {
    // The zod objects are made when first needed: a start that lists schemas from the cache never
    // builds them before the first call. Unknown keys are refused rather than silently dropped: a
    // misspelt argument must not turn into a default.
    let schema: z.ZodObject | undefined
    let output: z.ZodObject | undefined
    const inputOf = (): z.ZodObject => {
      schema ??= z.object(shapeOf(tool.input)).strict()
      return schema
    }
    const outputOf = (): z.ZodObject | undefined => {
      if (tool.output) output ??= z.object(shapeOf(tool.output))
      return output
    }
    const cached = schemaCache?.get(tool.name)
    const usable =
      cached && (cached.output !== undefined) === (tool.output !== undefined) ? cached : undefined
    const inputJson = usable?.input ?? jsonSchemaOf(inputOf(), 'input')
    const outputJson =
      tool.output === undefined
        ? undefined
        : (usable?.output ?? listedBudget(tool, jsonSchemaOf(outputOf() as z.ZodObject, 'output')))
    if (!usable)
      schemaCache?.set(tool.name, { input: inputJson, ...(outputJson ? { output: outputJson } : {}) })
    const title = listedTitle(tool.name, tool.title)
    const listed: Record<string, unknown> = {
      name: tool.name,
      ...(title === undefined ? {} : { title }),
      description: tool.description,
      inputSchema: inputJson,
    }
    listed.annotations = compactAnnotations(tool.annotations)
    if (outputJson) listed.outputSchema = outputJson
    if (tool.icons?.length) listed.icons = tool.icons
    const listedWithTasks = tool.taskSupport
      ? { ...listed, execution: { taskSupport: tool.taskSupport } }
      : listed
    plan = {
      tool,
      get schema() {
        return inputOf()
      },
      get output() {
        return outputOf()
      },
      listed,
      listedWithTasks,
      outputJson,
    }
    plans.set(tool, plan)
  }
  return plan
}

/**
 * A tool that cuts (`...budgetOutput` in its output) does not list `budget`: its shape is the same on
 * every tool (docs/observability.md, "Budgets"), the cut is also said in the text, the server checks
 * the member on every result, and a listed schema without `additionalProperties: false` admits it.
 * Listing it would cost ≈ 7 tokens a tool (≈ 30 spelled out) in every conversation.
 */
function listedBudget(tool: AnyTool, json: Record<string, unknown>): Record<string, unknown> {
  const properties = json.properties
  if (shapeOf(tool.output as Shape).budget !== budgetOutput.budget || !isNode(properties)) return json
  const { budget: _unlisted, ...listed } = properties
  return { ...json, properties: listed }
}

/** Formats zod issues as `field: problem` items the model can act on. */
export function describeIssues(error: z.ZodError): {
  text: string
  issues: Array<{ path: string; message: string }>
} {
  const issues = error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.join('.') : '(arguments)',
    message:
      issue.code === 'unrecognized_keys' ? `unknown argument(s): ${issue.keys.join(', ')}` : issue.message,
  }))
  return { text: issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), issues }
}

/** Applies toolsets, read-only and allow/deny lists. Throws a {@link ConfigError} (exit 2) on unknown tool names in the lists. */
export function selectTools<D, C>(spec: ServerSpec<D, C>, config: ParsedConfig<C>): AnyTool<D>[] {
  // The process's tools and their budgets are settled together: `max_tokens` is bounded by the cap.
  useAnswerCap(config.observe?.maxAnswerTokens)
  const all = typeof spec.tools === 'function' ? spec.tools(config) : spec.tools
  const names = new Set(all.map((tool) => tool.name))
  for (const [flag, asked] of [
    ['--tools', config.tools],
    ['--exclude-tools', config.excludeTools],
  ] as const) {
    const unknown = asked.filter((name) => !names.has(name))
    if (unknown.length) {
      throw new ConfigError(
        `Invalid ${flag}: unknown tool ${unknown.map((name) => `"${name}"`).join(', ')}; known: ${[...names].join(', ')}`,
        2,
      )
    }
  }
  const wanted = config.toolsets.length ? config.toolsets : (spec.defaultToolsets ?? ['all'])
  return all.filter((tool) => {
    if (!wanted.includes('all') && !wanted.includes(tool.toolset ?? 'default')) return false
    // Read-only removes writers from the list entirely, whatever else was asked for.
    if (config.readOnly && !tool.annotations.readOnlyHint) return false
    if (config.tools.length && !config.tools.includes(tool.name)) return false
    return !config.excludeTools.includes(tool.name)
  })
}
