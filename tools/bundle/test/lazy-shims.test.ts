import { spawnSync } from 'node:child_process'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundledFixture } from './fixture.js'

// The bin's copy of the SDK's Node shim: the default JSON Schema validator loads ajv on its first
// use instead of at start-up, and validates exactly as the SDK's own does. The fixture lives under
// packages/core/node_modules so that it resolves the SDK the way core does (no other package here
// depends on the SDK).
let work: string

beforeAll(async () => {
  work = await bundledFixture({
    'src/index.ts': [
      "import { DefaultJsonSchemaValidator, process } from '@modelcontextprotocol/server/_shims'",
      'const validator = new DefaultJsonSchemaValidator()',
      "if (process.env.FIXTURE_IDLE === '1') process.exit(0)",
      'const check = validator.getValidator({',
      "  type: 'object',",
      "  properties: { email: { type: 'string', format: 'email' }, age: { type: 'integer', minimum: 0 } },",
      "  required: ['email'],",
      '})',
      "const draft7 = validator.getValidator({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'string' })",
      'const results = [',
      "  check({ email: 'ada@example.com', age: 36 }),",
      "  check({ email: 'not an address' }),",
      '  check({ age: -1 }),',
      "  draft7('text'),",
      '  draft7(7),',
      ']',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is source code for the fixture
      'process.stdout.write(`${JSON.stringify(results.map(({ valid, errorMessage }) => ({ valid, errorMessage })))}\\n`)',
    ].join('\n'),
  })
})

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
})

describe('the bundled SDK shim', () => {
  it("validates with the SDK's ajv engines: formats, dialects and ajv's messages", () => {
    const run = spawnSync(process.execPath, [join(work, 'dist/index.js')], {
      env: { ...process.env, KEEL_COMPILE_CACHE: '0' },
      encoding: 'utf8',
    })
    expect(run.status, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual([
      { valid: true },
      { valid: false, errorMessage: 'data/email must match format "email"' },
      {
        valid: false,
        errorMessage: "data must have required property 'email', data/age must be >= 0",
      },
      { valid: true },
      { valid: false, errorMessage: 'data must be string' },
    ])
  })

  it('builds the ajv engines only when a schema is first validated', async () => {
    const server = await readFile(join(work, 'dist/server.js'), 'utf8')
    // ajv's code is not in the bundle the bin compiles at every start: it is a file of its own…
    expect(server).not.toContain('must have required property')
    const vendor = await readFile(join(work, 'dist/vendor/sdk-validator.js'), 'utf8')
    expect(vendor).toContain('must have required property')
    // …that the validator the SDK constructs loads inside getValidator()…
    const lazy =
      /getValidator\(\w+\)\{return \w+\?\?=require\("\.\/vendor\/sdk-validator\.js"\)\.DefaultJsonSchemaValidator/.exec(
        server,
      )
    expect(lazy, 'the lazy validator').not.toBeNull()
    // …and nowhere else: the bundle has no other reference to it.
    expect(server.split('./vendor/sdk-validator.js').length - 1).toBe(1)
  })

  it('does not load the validator file until a schema is validated', () => {
    const loadedVendorFiles = (env: Record<string, string>) => {
      const script = [
        `const vendor = ${JSON.stringify(join(work, 'dist/vendor'))}`,
        "process.on('exit', () => process.stderr.write(JSON.stringify(Object.keys(require.cache).filter((file) => file.startsWith(vendor))) + '\\n'))",
        `require(${JSON.stringify(join(work, 'dist/server.js'))})`,
      ].join('\n')
      const run = spawnSync(process.execPath, ['-e', script], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      })
      expect(run.status, run.stderr).toBe(0)
      return JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '')
    }
    // The SDK constructs its validator at start-up; nothing of ajv loads for that.
    expect(loadedVendorFiles({ FIXTURE_IDLE: '1' })).toEqual([])
    expect(loadedVendorFiles({})).toEqual([join(work, 'dist/vendor/sdk-validator.js')])
  })
})
