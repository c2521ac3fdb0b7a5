import { spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUNDLE, bundledFixture } from './fixture.js'

// A server's `keel.v8Flags` are set by its bin before the bundle is compiled. The fixture asks for
// one whose effect a script can see: `--allow-natives-syntax` lets later code call V8's `%`
// functions, a syntax error without it.
let work: string
let cacheDir: string

beforeAll(async () => {
  work = await bundledFixture(
    {
      'src/index.ts': [
        'let natives: string',
        "try { natives = String(new Function('return %IsSmi(1)')()) } catch (error) { natives = (error as Error).name }",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: this is source code for the fixture
        'process.stdout.write(`natives=${natives}\\n`)',
      ].join('\n'),
    },
    { keel: { v8Flags: ['--allow-natives-syntax'] } },
  )
  cacheDir = await mkdtemp(join(tmpdir(), 'keel-v8-flags-cache-'))
})

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
  await rm(cacheDir, { recursive: true, force: true })
})

function runBin(nodeArgs: string[] = []) {
  const result = spawnSync(process.execPath, [...nodeArgs, join(work, 'dist/index.js')], {
    env: { ...process.env, KEEL_COMPILE_CACHE_DIR: cacheDir, KEEL_COMPILE_CACHE_DEBUG: '1' },
    encoding: 'utf8',
  })
  const state = /keel compile cache: (\w+)/.exec(result.stderr)?.[1]
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, state }
}

describe("a server's V8 flags (keel.v8Flags)", () => {
  it('are set by the bin before the bundle runs, and its code cache is made and used under them', () => {
    const first = runBin()
    expect(first.status, first.stderr).toBe(0)
    expect(first.stdout).toBe('natives=true\n')
    expect(first.state).toBe('miss')
    // Made under the flags it is used under: V8 accepts it on the next start.
    const second = runBin()
    expect(second.stdout).toBe('natives=true\n')
    expect(second.state).toBe('hit')
  })

  it('give way to the same flag on node’s command line, in either polarity', () => {
    const refused = runBin(['--no-allow-natives-syntax'])
    expect(refused.status, refused.stderr).toBe(0)
    expect(refused.stdout).toBe('natives=SyntaxError\n')
  })

  it('are written into the bin as listed, and the bundler refuses anything but flags', async () => {
    expect(await readFile(join(work, 'dist/index.js'), 'utf8')).toContain(
      'const V8_FLAGS = ["--allow-natives-syntax"]',
    )
    for (const v8Flags of [['--stack-size=1; rm -rf /'], ['allow-natives-syntax'], '--liftoff-only']) {
      const pkg = JSON.parse(await readFile(join(work, 'package.json'), 'utf8'))
      await writeFile(join(work, 'package.json'), JSON.stringify({ ...pkg, keel: { v8Flags } }))
      const built = spawnSync(process.execPath, [BUNDLE], { cwd: work, encoding: 'utf8' })
      expect(built.status, JSON.stringify(v8Flags)).not.toBe(0)
      expect(built.stderr).toContain('keel.v8Flags must be a list of V8 flags')
    }
  })
})
