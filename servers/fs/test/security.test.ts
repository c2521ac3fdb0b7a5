import { symlink } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { type CallResult, call, connect, ok, useConnections } from './helpers.js'
import { makeTree, snapshot, useTempDirectories } from './temp-tree.js'

const tempDirectory = useTempDirectories()
useConnections()

/**
 * base/allowed is the one allowed directory. Next to it: base/allowed_evil (a prefix trick) and
 * base/outside (the sentinel), which links inside allowed lead to.
 */
async function setup() {
  const base = await tempDirectory()
  const allowed = path.join(base, 'allowed')
  const outside = path.join(base, 'outside')
  await makeTree(base, {
    allowed: {
      'file.txt': 'inside\n',
      dir: { 'nested.txt': 'nested\n' },
      'link-file': { symlink: path.join(outside, 'secret.txt') },
      'link-dir': { symlink: outside },
      dangling: { symlink: path.join(outside, 'created-through-link.txt') },
      '%2e%2e': {},
    },
    allowed_evil: { 'secret.txt': 'SECRET-CONTENT evil\n' },
    outside: { 'secret.txt': 'SECRET-CONTENT\n', sub: { 'deep.txt': 'SECRET-CONTENT deep\n' } },
  })
  await symlink(path.join(outside, 'sub'), path.join(allowed, 'dir', 'mid'))
  return { base, allowed, outside }
}

type Context = Awaited<ReturnType<typeof setup>>

/** Every path a model could use to reach outside the allowed directory. */
const vectors: Array<[string, (context: Context) => string]> = [
  ['relative ..', () => '../outside/secret.txt'],
  ['relative .. to a new file', () => '../created-by-escape.txt'],
  ['absolute path outside', ({ outside }) => `${outside}/secret.txt`],
  ['absolute new file outside', ({ outside }) => `${outside}/created-by-escape.txt`],
  ['.. inside an absolute path', ({ allowed }) => `${allowed}/dir/../../outside/secret.txt`],
  ['prefix trick /allowed_evil', ({ base }) => `${base}/allowed_evil/secret.txt`],
  ['system file', () => '/etc/passwd'],
  ['home directory ~', () => '~/secret.txt'],
  ['bare ~', () => '~'],
  ['NUL byte', () => 'file.txt\0../../outside/secret.txt'],
  ['file URI outside', ({ outside }) => `file://${outside}/secret.txt`],
  ['file URI with encoded ..', ({ allowed }) => `file://${allowed}/%2e%2e/outside/secret.txt`],
  // Not decoded: a directory literally named %2e%2e inside the root. It may be created, moved or read; what
  // matters is that nothing outside changes (checked at the end).
  ['percent-encoded .. (a literal name inside)', () => '%2e%2e/%2e%2e/outside/secret.txt'],
  ['symlink to an outside file', () => 'link-file'],
  ['symlinked parent directory', () => 'link-dir/secret.txt'],
  ['new file under a symlinked parent', () => 'link-dir/created-by-escape.txt'],
  ['dangling symlink leading outside', () => 'dangling'],
  ['symlink in the middle of the path', () => 'dir/mid/deep.txt'],
]

/** Arguments for every use of a path by every tool. */
const uses: Array<[string, string, (target: string) => Record<string, unknown>]> = [
  ['read_text_file', 'path', (target) => ({ path: target })],
  ['read_text_file', 'tail', (target) => ({ path: target, tail: 1 })],
  ['read_media_file', 'path', (target) => ({ path: target })],
  ['list_directory', 'path', (target) => ({ path: target, sizes: true })],
  ['directory_tree', 'path', (target) => ({ path: target })],
  ['search_files', 'path', (target) => ({ path: target, pattern: '*' })],
  ['search_content', 'path', (target) => ({ path: target, pattern: 'SECRET' })],
  ['get_file_info', 'path', (target) => ({ path: target })],
  ['write_file', 'path', (target) => ({ path: target, content: 'PWNED' })],
  ['write_file', 'path, no overwrite', (target) => ({ path: target, content: 'PWNED', overwrite: false })],
  [
    'edit_file',
    'path',
    (target) => ({ path: target, edits: [{ old_text: 'SECRET-CONTENT', new_text: 'PWNED' }] }),
  ],
  [
    'edit_file',
    'path, dry run',
    (target) => ({ path: target, edits: [{ old_text: 'SECRET-CONTENT', new_text: 'PWNED' }], dry_run: true }),
  ],
  ['create_directory', 'path', (target) => ({ path: target })],
  ['create_directory', 'path below', (target) => ({ path: `${target}/below` })],
  ['move_file', 'destination', (target) => ({ source: 'file.txt', destination: target })],
  [
    'move_file',
    'destination, overwrite',
    (target) => ({ source: 'file.txt', destination: target, overwrite: true }),
  ],
  ['move_file', 'source', (target) => ({ source: target, destination: 'moved-in.txt' })],
]

/**
 * Uses that legitimately act on a symlink itself, inside the allowed directory, without touching its target:
 * get_file_info describes the link, move_file moves the link as a link.
 */
function actsOnLinkItself(tool: string, use: string, vector: string): boolean {
  const finalLink = vector === 'symlink to an outside file' || vector === 'dangling symlink leading outside'
  return finalLink && (tool === 'get_file_info' || (tool === 'move_file' && use === 'source'))
}

const modes: Array<[string, (context: Context) => { argv: string[]; roots?: Array<{ uri: string }> }]> = [
  ['default', ({ allowed }) => ({ argv: [allowed] })],
  ['--read-only', ({ allowed }) => ({ argv: [allowed, '--read-only'] })],
  [
    'client roots narrowing to the same directory',
    ({ allowed }) => ({ argv: [allowed], roots: [{ uri: `file://${allowed}` }] }),
  ],
  [
    'no configured directories, client roots only',
    ({ allowed }) => ({ argv: [], roots: [{ uri: `file://${allowed}` }] }),
  ],
]

/** Everything under `base` except the allowed directory itself. */
async function outsideState(base: string): Promise<Record<string, string>> {
  const all = await snapshot(base)
  return Object.fromEntries(
    Object.entries(all).filter(([key]) => key !== 'allowed' && !key.startsWith(`allowed${path.sep}`)),
  )
}

function refused(result: CallResult, tool: string): boolean {
  if (result.isError) return true
  // read_multiple_files reports per file.
  return (
    tool === 'read_multiple_files' && result.structured.files.every((file: { error?: string }) => file.error)
  )
}

describe.each(modes)('escape attempts (%s)', (mode, configure) => {
  it('refuses every tool on every escape vector and never touches anything outside', async () => {
    const context = await setup()
    const { base, allowed, outside } = context
    const before = await outsideState(base)
    const { argv, roots } = configure(context)
    const connection = await connect(argv, roots ? { roots } : {})
    const listed = new Set((await connection.client.listTools()).tools.map((tool) => tool.name))
    const failures: string[] = []
    let attempts = 0
    for (const [vectorName, vector] of vectors) {
      const target = vector(context)
      const runs: Array<[string, string, Record<string, unknown>]> = [
        ...uses.map(
          ([tool, use, args]) => [tool, use, args(target)] as [string, string, Record<string, unknown>],
        ),
        ['read_multiple_files', 'paths', { paths: [target] }],
      ]
      for (const [tool, use, args] of runs) {
        if (!listed.has(tool)) continue
        attempts++
        const result = await call(connection, tool, args)
        const where = `${tool} (${use}) with ${vectorName}`
        if (actsOnLinkItself(tool, use, vectorName) || vectorName.startsWith('percent-encoded')) {
          if (result.text.includes(outside))
            failures.push(`${where}: revealed the outside target: ${result.text}`)
          continue
        }
        if (!refused(result, tool)) {
          failures.push(`${where}: not refused: ${result.text.slice(0, 200)}`)
          continue
        }
        const text = tool === 'read_multiple_files' ? result.structured.files[0].error : result.text
        if (text.includes('SECRET-CONTENT')) failures.push(`${where}: leaked content`)
        // A denial may repeat the model's own target (a file URI decoded); it must not reveal where a link leads.
        if (!target.includes(outside) && !target.startsWith('file:') && text.includes(outside))
          failures.push(`${where}: named the outside location: ${text}`)
        if (text.startsWith('permission_denied') && text.includes('outside the allowed directories')) {
          if (!text.includes(`Allowed directories: ${allowed}`))
            failures.push(`${where}: did not name the allowed directories: ${text}`)
        }
      }
    }
    expect(failures).toEqual([])
    const listedUses = uses.filter(([tool]) => listed.has(tool)).length + 1
    expect(attempts).toBe(vectors.length * listedUses)
    expect(listedUses).toBe(mode === '--read-only' ? 9 : 18)
    expect(await outsideState(base)).toEqual(before)
  })

  it('keeps outside content out of walks and searches of the allowed directory', async () => {
    const context = await setup()
    const { argv, roots } = configure(context)
    const connection = await connect(argv, roots ? { roots } : {})
    const tree = await ok(connection, 'directory_tree', { path: '.' })
    expect(tree.text).toContain('link-dir@')
    expect(tree.text).not.toMatch(/secret|deep/)
    const files = await ok(connection, 'search_files', { path: '.', pattern: '*' })
    expect(files.structured.paths.join('\n')).not.toMatch(/secret|deep/)
    const content = await ok(connection, 'search_content', { path: '.', pattern: 'SECRET-CONTENT' })
    expect(content.structured.matches).toEqual([])
    const listing = await ok(connection, 'list_directory', { path: 'link-dir/..', sizes: true })
    expect(listing.text).not.toContain('secret')
  })
})

describe('denial messages', () => {
  it('name the allowed directories for .., ~, NUL and absolute paths outside', async () => {
    const { allowed, outside } = await setup()
    const connection = await connect([allowed])
    for (const target of ['../outside/secret.txt', '~/x', 'a\0b', `${outside}/secret.txt`]) {
      const result = await call(connection, 'read_text_file', { path: target })
      expect(result.text).toMatch(/^permission_denied: Access denied/)
      expect(result.text).toContain(`Allowed directories: ${allowed}`)
    }
  })

  it('do not reveal where a symlink leads outside', async () => {
    const { allowed, outside } = await setup()
    const connection = await connect([allowed])
    const result = await call(connection, 'read_text_file', { path: 'link-file' })
    expect(result.text).toMatch(
      /^permission_denied: Access denied: link-file resolves through a symbolic link/,
    )
    expect(result.text).not.toContain(outside)
    const info = await ok(connection, 'get_file_info', { path: 'link-file' })
    expect(info.structured).toMatchObject({ type: 'symlink', linkStatus: 'outside' })
    expect(info.structured.linkTarget).toBeUndefined()
    expect(info.text).toContain('[the link leads outside the allowed directories]')
  })

  it('refuse writing through a symlink that stays inside, naming its target', async () => {
    const { allowed } = await setup()
    await symlink('file.txt', path.join(allowed, 'inner-link'))
    const connection = await connect([allowed])
    const result = await call(connection, 'write_file', { path: 'inner-link', content: 'x' })
    expect(result.text).toBe(
      `permission_denied: Refusing to write through a symbolic link: inner-link\nHint: Write to the link's target instead: ${allowed}/file.txt`,
    )
  })
})
