import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { useTempDirectories } from '../../test/temp-tree.js'
import { applyEdits, detectLineEnding, editFile, findNearMiss } from './edit.js'
import { FsError } from './errors.js'
import { PathGuard } from './path-guard.js'

const tempDirectory = useTempDirectories()

function failure(run: () => unknown): FsError {
  try {
    run()
  } catch (error) {
    if (error instanceof FsError) return error
    throw error
  }
  throw new Error('expected an FsError')
}

const source = [
  'function greet(name) {',
  '  if (name) {',
  "    return 'hi ' + name",
  '  }',
  '  return null',
  '}',
  '',
].join('\n')

describe('applyEdits', () => {
  it('replaces exact text', () => {
    const result = applyEdits(source, [{ oldText: "'hi '", newText: "'hello '" }])
    expect(result.content).toContain("return 'hello ' + name")
    expect(result.applied).toEqual([{ index: 0, strategy: 'exact', replacements: 1, line: 3 }])
    expect(result.changed).toBe(true)
  })

  it('applies edits in order, each to the result of the previous one', () => {
    const result = applyEdits('alpha', [
      { oldText: 'alpha', newText: 'beta' },
      { oldText: 'beta', newText: 'gamma' },
    ])
    expect(result.content).toBe('gamma')
  })

  it('refuses an ambiguous old_text and lists where it matched', () => {
    const error = failure(() => applyEdits('x = 1\ny = 2\nx = 1\n', [{ oldText: 'x = 1', newText: 'x = 3' }]))
    expect(error.code).toBe('invalid_argument')
    expect(error.message).toBe('edits[0]: old_text matches 2 places (lines 1, 3).')
    expect(error.hint).toMatch(/replace_all/)
  })

  it('replaces every occurrence with replaceAll', () => {
    const result = applyEdits('x = 1\ny = 2\nx = 1\n', [
      { oldText: 'x = 1', newText: 'x = 3', replaceAll: true },
    ])
    expect(result.content).toBe('x = 3\ny = 2\nx = 3\n')
    expect(result.applied[0]).toMatchObject({ replacements: 2 })
  })

  it('rejects an empty old_text', () => {
    const error = failure(() => applyEdits('abc', [{ oldText: '', newText: 'x' }]))
    expect(error).toMatchObject({
      code: 'invalid_argument',
      message: 'edits[0]: old_text must not be empty.',
    })
  })

  it('rejects an empty edit list', () => {
    expect(failure(() => applyEdits('abc', [])).code).toBe('invalid_argument')
  })

  it('matches despite different indentation and re-indents the new text', () => {
    const result = applyEdits(source, [
      {
        oldText: "if (name) {\n  return 'hi ' + name\n}",
        newText: "if (name) {\n  const greeting = 'hi '\n  return greeting + name\n}",
      },
    ])
    expect(result.applied[0]).toMatchObject({ strategy: 'indentation', line: 2 })
    expect(result.content).toBe(
      [
        'function greet(name) {',
        '  if (name) {',
        "    const greeting = 'hi '",
        '    return greeting + name',
        '  }',
        '  return null',
        '}',
        '',
      ].join('\n'),
    )
  })

  it('removes surplus indentation when oldText was more indented than the file', () => {
    const result = applyEdits('a\nb\n', [{ oldText: '    a\n    b', newText: '    a\n      b2' }])
    expect(result.content).toBe('a\n  b2\n')
  })

  it('matches across tabs versus spaces and keeps the file indentation', () => {
    const content = 'def f():\n\tif x:\n\t\treturn 1\n'
    const result = applyEdits(content, [
      { oldText: '    if x:\n        return 1', newText: '    if x:\n        return 2' },
    ])
    expect(result.content).toBe('def f():\n\tif x:\n\t    return 2\n')
    expect(result.applied[0]!.strategy).toBe('indentation')
  })

  it('matches when inner whitespace differs', () => {
    const result = applyEdits('const  x =   1\n', [{ oldText: 'const x = 1', newText: 'const x = 2' }])
    expect(result).toMatchObject({ content: 'const x = 2\n', applied: [{ strategy: 'whitespace' }] })
  })

  it('keeps CRLF line endings when oldText and newText use LF', () => {
    const content = 'one\r\ntwo\r\nthree\r\n'
    const result = applyEdits(content, [{ oldText: 'one\ntwo\n', newText: 'uno\ndos\n' }])
    expect(result.content).toBe('uno\r\ndos\r\nthree\r\n')
    expect(result.applied[0]!.strategy).toBe('line-endings')
  })

  it('keeps LF line endings when the model sends CRLF', () => {
    const result = applyEdits('a\nb\n', [{ oldText: 'a\r\nb', newText: 'c\r\nd' }])
    expect(result.content).toBe('c\nd\n')
  })

  it('leaves untouched lines of a mixed-ending file exactly as they were', () => {
    const content = 'keep\r\n  old line\nlast\r\n'
    const result = applyEdits(content, [{ oldText: 'old line', newText: 'new line' }])
    expect(result.content).toBe('keep\r\n  new line\nlast\r\n')
  })

  it('deletes whole lines when a tolerant match is replaced with nothing', () => {
    const result = applyEdits('a\n  b\nc\n', [{ oldText: '    b\n', newText: '' }])
    expect(result.content).toBe('a\nc\n')
  })

  it('reports a miss with the edit index and the closest lines with line numbers', () => {
    const error = failure(() =>
      applyEdits(source, [
        { oldText: 'function greet', newText: 'function welcome' },
        { oldText: "if (name) {\n  return 'hello ' + name", newText: 'x' },
      ]),
    )
    expect(error.code).toBe('not_found')
    expect(error.message).toContain('edits[1]: old_text was not found. Closest match')
    expect(error.message).toContain('at lines 2-3:')
    expect(error.message).toContain("3│    return 'hi ' + name")
    expect(error.message).toContain(
      "Diff (- old_text, + file):\n-     │  return 'hello ' + name\n+    3│    return 'hi ' + name",
    )
    expect(error.details).toMatchObject({ editIndex: 1, closestLine: 2 })
  })

  it('says so when nothing is even similar', () => {
    const error = failure(() => applyEdits(source, [{ oldText: 'zzzz qqqq', newText: 'x' }]))
    expect(error.message).toBe('edits[0]: old_text was not found, and nothing similar was found.')
  })
})

describe('findNearMiss', () => {
  it('finds the most similar window in a long file within its work budget', () => {
    const lines = Array.from({ length: 50_000 }, (_, index) => `const value${index} = compute(${index})`)
    lines[41_234] = 'const target = computeSomething(arg1, arg2)'
    const started = performance.now()
    const nearMiss = findNearMiss(lines.join('\n'), 'const target = computeSomething(arg1, arg3)')
    expect(nearMiss?.line).toBe(41_235)
    expect(performance.now() - started).toBeLessThan(5000)
  })
})

describe('detectLineEnding', () => {
  it.each([
    ['a\nb\n', '\n'],
    ['a\r\nb\r\n', '\r\n'],
    ['a\r\nb\r\nc\n', '\r\n'],
    ['no newline', '\n'],
  ])('%j uses %j', (text, expected) => {
    expect(detectLineEnding(text)).toBe(expected)
  })
})

describe('editFile', () => {
  async function setup(content: string | Buffer) {
    const root = await tempDirectory()
    await writeFile(path.join(root, 'code.js'), content)
    const { guard } = await PathGuard.create([root])
    return {
      target: path.join(root, 'code.js'),
      file: await guard.resolveSafe('code.js', { forWrite: true }),
    }
  }

  it('writes the edited file and returns a unified diff', async () => {
    const { target, file } = await setup(source)
    const result = await editFile(file, [{ oldText: 'return null', newText: 'return undefined' }])
    expect(result).toMatchObject({ changed: true, written: true })
    expect(result.diff).toContain('-  return null')
    expect(result.diff).toContain('+  return undefined')
    expect(result.diff).toMatch(/^@@ -2,5 \+2,5 @@$/m)
    expect(await readFile(target, 'utf8')).toContain('return undefined')
  })

  it('does not write on a dry run', async () => {
    const { target, file } = await setup(source)
    const result = await editFile(file, [{ oldText: 'return null', newText: 'return 0' }], { dryRun: true })
    expect(result).toMatchObject({ changed: true, written: false })
    expect(result.diff).toContain('+  return 0')
    expect(await readFile(target, 'utf8')).toBe(source)
  })

  it('leaves the file untouched when any edit fails', async () => {
    const { target, file } = await setup(source)
    await expect(
      editFile(file, [
        { oldText: 'return null', newText: 'return 0' },
        { oldText: 'no such text anywhere', newText: 'x' },
      ]),
    ).rejects.toMatchObject({ code: 'not_found' })
    expect(await readFile(target, 'utf8')).toBe(source)
  })

  it('keeps a byte order mark and CRLF endings', async () => {
    const content = '\ufeffline one\r\nline two\r\n'
    const { target, file } = await setup(content)
    await editFile(file, [{ oldText: 'line two\n', newText: 'line 2\n' }])
    expect(await readFile(target, 'utf8')).toBe('\ufeffline one\r\nline 2\r\n')
  })

  it('refuses a file that is not valid UTF-8', async () => {
    const { file } = await setup(
      Buffer.concat([Buffer.from('text '), Buffer.from([0xff, 0xfe]), Buffer.alloc(9000, 0x61)]),
    )
    await expect(editFile(file, [{ oldText: 'text', newText: 'x' }])).rejects.toMatchObject({
      code: 'binary',
    })
  })

  it('refuses a file over the size cap', async () => {
    const { file } = await setup('x'.repeat(5000))
    await expect(editFile(file, [{ oldText: 'x', newText: 'y' }], { maxBytes: 1000 })).rejects.toMatchObject({
      code: 'too_large',
    })
  })

  it('reports no change without writing when the result is identical', async () => {
    const { file } = await setup(source)
    const result = await editFile(file, [{ oldText: 'return null', newText: 'return null' }])
    expect(result).toMatchObject({ changed: false, written: false, diff: '' })
  })
})
