import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

// Rooms a reader can hold (STYLE.md): no function of core longer than about 150 lines. Measured
// with the TypeScript parser over every function-like node that has a body (declarations,
// expressions, arrows, methods, accessors, constructors), from its first line to its last.

const LIMIT = 150
const SOURCE = join(dirname(fileURLToPath(import.meta.url)), '../src')

/** Functions allowed past the limit, each at most its length here: none today. */
const GRANDFATHERED: Record<string, number> = {}

interface Measured {
  /** `path/of/file.ts name` */
  id: string
  line: number
  lines: number
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

function nameOf(node: ts.SignatureDeclaration, file: ts.SourceFile): string {
  if (node.name) return node.name.getText(file)
  const parent = node.parent
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(file)
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  return '(anonymous)'
}

function measure(path: string): Measured[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true)
  const found: Measured[] = []
  const lineOf = (position: number) => file.getLineAndCharacterOfPosition(position).line + 1
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = lineOf(node.getStart(file))
      found.push({
        id: `${relative(SOURCE, path).split('\\').join('/')} ${nameOf(node, file)}`,
        line: first,
        lines: lineOf(node.getEnd()) - first + 1,
      })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

describe('core function length', () => {
  const measured = sourceFiles(SOURCE).flatMap(measure)

  it('measures every function of core (the walk finds what it should)', () => {
    const ids = measured.map((entry) => entry.id)
    expect(ids).toContain('http.ts serveHttp')
    expect(ids).toContain('config/parse.ts parseConfig')
    expect(ids).toContain('http/sessions.ts makeRoom')
    expect(measured.length).toBeGreaterThan(500)
  })

  it(`keeps every function at ${LIMIT} lines or fewer (the grandfathered ones no longer than they were)`, () => {
    const tooLong = measured
      .filter((entry) => entry.lines > (GRANDFATHERED[entry.id] ?? LIMIT))
      .map((entry) => `${entry.id} (line ${entry.line}): ${entry.lines} lines`)
    expect(tooLong).toEqual([])
  })
})
