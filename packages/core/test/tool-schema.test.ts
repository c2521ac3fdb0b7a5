import { afterEach, describe, expect, it } from 'vitest'
import { budgetOutput, defineServer, defineTool, shapeOf, z } from '../src/index.js'
import { type Connection, connectInMemory } from '../src/testing/index.js'
import { compactAnnotations, listedTitle, planFor, useSchemaCache } from '../src/tool-schema.js'

// What tools/list emits: compact schemas that keep their meaning, and results that still
// validate against them in both client generations (each validates structuredContent).

const status = z.enum(['open', 'closed'])
const person = z.object({ login: z.string().describe('GitHub login'), name: z.string().nullable() })

const rich = defineTool({
  name: 'get_rich',
  title: 'Rich',
  description: 'Returns every kind of shape.',
  input: {
    description: z.string().optional().describe('A property named description stays'),
    per_page: z.number().int().min(1).max(100).default(30).describe('Per page'),
    count: z.number().int().describe('How many'),
    merge_method: z.enum(['merge', 'squash']).optional().describe('Method'),
    include_patch: z.boolean().optional().describe('Include patches.'),
    head_sha: z.string().optional().describe('Head'),
    reason: z.enum(['a', 'b']).nullable().optional().describe('Why'),
    state: status.default('open').describe('Filter'),
    when: z.string().regex(/^\d+$/).optional().describe('Digits'),
  },
  output: {
    id: z.number().int().describe('Unique id'),
    state: status,
    reason: z.enum(['a', 'b']).nullable(),
    author: person.nullable(),
    people: z.array(person).describe('Everyone'),
    labels: z.record(z.string(), z.number()),
    when: z.iso.datetime().optional(),
    note: z.string().max(10).default('none'),
    anything: z.unknown(),
    description: z.string().nullable(),
    extra: z.array(z.looseObject({ id: z.number() })),
    bag: z.looseObject({}),
  },
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  run: ({ count }) => ({
    data: {
      id: count,
      state: 'open' as const,
      reason: count > 1 ? ('a' as const) : null,
      author: count > 1 ? { login: 'octocat', name: null } : null,
      people: [{ login: 'hubot', name: 'Hubot' }],
      labels: { bug: 2 },
      ...(count > 1 ? { when: '2026-01-02T03:04:05Z' } : {}),
      anything: [1, 'two'],
      description: count > 1 ? 'text' : null,
      extra: [{ id: 1, more: 'kept' }],
      bag: { any: ['thing'] },
    },
  }),
})

const spec = defineServer({
  name: 'schema-fixture',
  version: '1.0.0',
  description: 'schema fixture',
  tools: [rich],
  createDeps: () => ({}),
})

const open: Connection[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((connection) => connection.close()))
})

describe('tools/list schemas', () => {
  it('emits the output shape only: types, nesting, required keys and enums', () => {
    expect(planFor(rich).listed.outputSchema).toEqual({
      type: 'object',
      properties: {
        id: { type: 'integer' },
        state: { enum: ['open', 'closed'] },
        reason: { enum: ['a', 'b', null] },
        author: {
          anyOf: [
            {
              type: 'object',
              properties: {
                login: { type: 'string' },
                name: { anyOf: [{ type: 'string' }, { type: 'null' }] },
              },
              required: ['login', 'name'],
            },
            { type: 'null' },
          ],
        },
        people: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              login: { type: 'string' },
              name: { anyOf: [{ type: 'string' }, { type: 'null' }] },
            },
            required: ['login', 'name'],
          },
        },
        labels: { type: 'object', additionalProperties: { type: 'number' } },
        when: { type: 'string' },
        note: { type: 'string' },
        anything: {},
        description: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        extra: {
          type: 'array',
          items: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] },
        },
        bag: { type: 'object' },
      },
      required: [
        'id',
        'state',
        'reason',
        'author',
        'people',
        'labels',
        'note',
        'anything',
        'description',
        'extra',
        'bag',
      ],
    })
  })

  it('keeps what the model writes by: descriptions, defaults, bounds and patterns, minus echoes and noise', () => {
    expect(planFor(rich).listed.inputSchema).toEqual({
      type: 'object',
      properties: {
        description: { type: 'string', description: 'A property named description stays' },
        per_page: { type: 'integer', minimum: 1, maximum: 100, default: 30 },
        count: { type: 'integer', description: 'How many' },
        merge_method: { type: 'string', enum: ['merge', 'squash'] },
        include_patch: { type: 'boolean' },
        head_sha: { type: 'string', description: 'Head' },
        reason: { anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }], description: 'Why' },
        state: { type: 'string', enum: ['open', 'closed'], default: 'open', description: 'Filter' },
        when: { type: 'string', pattern: '^\\d+$', description: 'Digits' },
      },
      required: ['count'],
    })
  })

  it('lists no type arrays anywhere: each becomes anyOf branches of one type, keeping the same values', () => {
    const unions = defineTool({
      name: 'get_unions',
      title: 'Unions',
      description: 'Unions of every kind.',
      input: {
        value: z.union([z.string().min(2), z.number().max(9), z.boolean(), z.null()]),
        pick: z.union([z.literal('x'), z.literal(3), z.null()]).optional(),
        plain: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).describe('Values'),
        choice: z.enum(['a', 'b']).nullable().describe('Pick one'),
      },
      output: { maybe: z.array(z.number()).nullable() },
      annotations: { readOnlyHint: true, openWorldHint: false },
      run: () => ({ data: { maybe: null } }),
    })
    const listed = planFor(unions).listed
    const text = JSON.stringify(listed)
    expect(text).not.toMatch(/"type":\[/)
    const { value, pick, plain, choice } = (listed.inputSchema as { properties: Record<string, any> })
      .properties
    const branchTypes = (schema: { anyOf: Array<{ type?: string }> }) =>
      schema.anyOf.map((branch) => branch.type)
    expect(new Set(branchTypes(value))).toEqual(new Set(['string', 'number', 'boolean', 'null']))
    expect(value.anyOf.find((branch: { type: string }) => branch.type === 'string')).toMatchObject({
      minLength: 2,
    })
    expect(value.anyOf.find((branch: { type: string }) => branch.type === 'number')).toMatchObject({
      maximum: 9,
    })
    expect(value.anyOf.find((branch: { type: string }) => branch.type === 'null')).toEqual({ type: 'null' })
    expect(JSON.stringify(pick)).toContain('"x"')
    // zod writes these as type lists; they are listed as one-type branches.
    expect(plain).toEqual({
      type: 'array',
      items: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }] },
      description: 'Values',
    })
    expect(choice).toEqual({
      anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }],
      description: 'Pick one',
    })
    expect((listed.outputSchema as { properties: Record<string, unknown> }).properties.maybe).toEqual({
      anyOf: [{ type: 'array', items: { type: 'number' } }, { type: 'null' }],
    })
  })

  it('lists the title once and annotations without their defaults', () => {
    const listed = planFor(rich).listed
    expect(listed.title).toBe('Rich')
    expect(listed.annotations).toEqual({ readOnlyHint: true, openWorldHint: false })
    expect(JSON.stringify(listed)).not.toContain('$schema')
  })

  it.each([
    ['read_text_file', 'Read text file', undefined],
    ['get_me', 'Get me', undefined],
    ['list_allowed_directories', 'List Allowed Directories', undefined],
    ['query', 'Run a read-only SQL query', 'Run a read-only SQL query'],
    ['explain_query', 'Explain a query', 'Explain a query'],
    ['search_content', 'Search file contents', 'Search file contents'],
    ['get_rich', 'Rich', 'Rich'],
    // A tool written in plain JavaScript without one (the types ask for one).
    ['untitled', undefined, undefined],
  ])('lists the title of %s, %j, as %j (none when it only restates the name)', (name, title, listed) => {
    expect(listedTitle(name, title)).toBe(listed)
  })

  it('lists a tool without a title (plain JavaScript) without one', () => {
    const untitled = { ...rich, name: 'get_untitled', title: undefined as unknown as string }
    const listed = planFor(untitled).listed
    expect(listed).not.toHaveProperty('title')
    expect(listed.name).toBe('get_untitled')
  })

  it('leaves a title that restates the name out of tools/list', () => {
    const echo = defineTool({ ...rich, name: 'get_rich_shape', title: 'Get rich shape' })
    const listed = planFor(echo).listed
    expect(listed).not.toHaveProperty('title')
    expect(Object.keys(listed).slice(0, 2)).toEqual(['name', 'description'])
  })

  it.each([
    [{ readOnlyHint: true, openWorldHint: true }, { readOnlyHint: true }],
    [
      { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
      { readOnlyHint: true, openWorldHint: false },
    ],
    [{ readOnlyHint: false, destructiveHint: false, openWorldHint: true }, { destructiveHint: false }],
    [{ readOnlyHint: false, destructiveHint: true, openWorldHint: true }, { destructiveHint: true }],
    [{ readOnlyHint: false, openWorldHint: true }, { destructiveHint: true }],
    [
      { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    ],
  ])(
    'annotations %j are listed as %j (every tool lists some; a writer always says whether it destroys)',
    (annotations, listed) => {
      expect(compactAnnotations(annotations)).toEqual(listed)
    },
  )
})

describe.each([
  { label: 'v2 client', options: {} },
  { label: 'v2 client, 2026-07-28 era', options: { era: 'modern' as const } },
  { label: 'v1 client (Ajv)', options: { generation: 'v1' as const } },
])('structured results against the emitted schema ($label)', ({ options }) => {
  it.each([1, 2])(
    'a result with nulls and optional fields (count %i) passes the client validation',
    async (count) => {
      const connection = await connectInMemory(spec, options)
      open.push(connection)
      const { tools } = await connection.client.listTools()
      expect(tools[0]?.outputSchema).toEqual(planFor(rich).listed.outputSchema)
      const result = await connection.client.callTool({ name: 'get_rich', arguments: { count } })
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toMatchObject({
        id: count,
        note: 'none',
        labels: { bug: 2 },
        extra: [{ id: 1, more: 'kept' }],
      })
    },
  )
})

describe('shapes given as functions', () => {
  const built = { input: 0, output: 0 }
  const lazy = defineTool({
    name: 'get_lazy',
    title: 'Lazy',
    description: 'The rich tool with its shapes built on first use.',
    input: () => {
      built.input++
      return shapeOf(rich.input)
    },
    output: () => {
      built.output++
      // With the budget member, whose listing core leaves out: that check reads the shape too.
      return { ...shapeOf(rich.output!), ...budgetOutput }
    },
    annotations: rich.annotations,
    run: rich.run,
  })

  it('list and check exactly as the shapes themselves would, building each shape once', async () => {
    const eager = defineTool({
      ...lazy,
      name: 'get_eager',
      input: shapeOf(lazy.input),
      output: shapeOf(lazy.output!),
    })
    expect(built).toEqual({ input: 1, output: 1 })
    expect({ ...planFor(lazy).listed, name: 'get_eager' }).toEqual(planFor(eager).listed)
    const connection = await connectInMemory(
      defineServer({
        name: 'lazy',
        version: '1.0.0',
        description: 'Lazy shapes.',
        tools: [lazy],
        createDeps: () => ({}),
      }),
    )
    open.push(connection)
    expect(
      (await connection.client.callTool({ name: 'get_lazy', arguments: { count: 2 } })).structuredContent,
    ).toMatchObject({ id: 2 })
    const refused = await connection.client.callTool({ name: 'get_lazy', arguments: { count: 'two' } })
    expect(refused.isError).toBe(true)
    expect(built).toEqual({ input: 1, output: 1 })
  })

  it('are not built for a listing that comes from the schema cache', async () => {
    const cached = planFor(lazy).listed
    const counted = { input: 0, output: 0 }
    const again = defineTool({
      ...lazy,
      input: () => {
        counted.input++
        return shapeOf(lazy.input)
      },
      output: () => {
        counted.output++
        return shapeOf(lazy.output!)
      },
    })
    useSchemaCache({
      get: (tool) =>
        tool === 'get_lazy'
          ? {
              input: cached.inputSchema as Record<string, unknown>,
              output: cached.outputSchema as Record<string, unknown>,
            }
          : undefined,
      set: () => {},
    })
    try {
      expect(planFor(again).listed).toEqual(cached)
      expect(counted).toEqual({ input: 0, output: 0 })
      expect(planFor(again).schema.safeParse({ count: 1 }).success).toBe(true)
      expect(counted).toEqual({ input: 1, output: 0 })
    } finally {
      useSchemaCache(undefined)
    }
  })
})
