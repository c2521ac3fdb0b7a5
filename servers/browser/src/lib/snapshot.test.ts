import { describe, expect, it } from 'vitest'
import { Refs } from './refs.js'
import { type AXNode, renderTree } from './snapshot.js'

interface Spec {
  role: string
  name?: string
  value?: string
  ignored?: boolean
  properties?: Record<string, unknown>
  children?: Spec[]
}

const el = (role: string, name?: string, ...children: Spec[]): Spec => ({
  role,
  ...(name === undefined ? {} : { name }),
  children,
})
const txt = (name: string): Spec => ({ role: 'StaticText', name })

/** The nodes CDP's Accessibility.getFullAXTree would give for `root` (backend ids 1, 2, …). */
function axTree(root: Spec): AXNode[] {
  const nodes: AXNode[] = []
  const add = (spec: Spec, parentId?: string): string => {
    const nodeId = String(nodes.length + 1)
    const node: AXNode = {
      nodeId,
      role: { value: spec.role },
      backendDOMNodeId: nodes.length + 1,
      ...(parentId ? { parentId } : {}),
      ...(spec.name === undefined ? {} : { name: { value: spec.name } }),
      ...(spec.value === undefined ? {} : { value: { value: spec.value } }),
      ...(spec.ignored ? { ignored: true } : {}),
      properties: Object.entries(spec.properties ?? {}).map(([name, value]) => ({ name, value: { value } })),
    }
    nodes.push(node)
    node.childIds = (spec.children ?? []).map((child) => add(child, nodeId))
    return nodeId
  }
  add(root)
  return nodes
}

function render(root: Spec, options: { depth?: number } = {}, refs = new Refs({ next: 0 })) {
  const nodes = axTree(root)
  return renderTree(nodes, nodes[0], refs, options).lines.join('\n')
}

const page = (...children: Spec[]) => el('RootWebArea', 'Title', ...children)

describe('renderTree', () => {
  it('folds unnamed wrappers: their children move up, one space a level', () => {
    const tree = page(
      el(
        'main',
        undefined,
        el('generic', undefined, el('generic', undefined, el('list', undefined))),
        txt('x'),
      ),
    )
    expect(render(tree)).toBe('main\n list\n "x"')
  })

  it('gives every interactive or named element a ref, with its role, name, states and value', () => {
    const tree = page(
      { role: 'heading', name: 'Sign up', properties: { level: 1 }, children: [txt('Sign up')] },
      { role: 'textbox', name: 'Name', value: 'Ada', properties: { required: true } },
      { role: 'checkbox', name: 'I agree', properties: { checked: 'true' } },
      { role: 'button', name: 'Later', properties: { disabled: true, pressed: false } },
      el('button'),
      el('image', 'Logo'),
      el('paragraph', undefined, txt('Plain text.')),
    )
    expect(render(tree)).toBe(
      [
        'h1 "Sign up" #e1',
        'textbox "Name" [required] #e2: "Ada"',
        'checkbox "I agree" [checked] #e3',
        'button "Later" [disabled] #e4',
        'button #e5',
        'img "Logo" #e6',
        '"Plain text."',
      ].join('\n'),
    )
  })

  it('puts an element holding only one element on its line, and says a shared name once', () => {
    const tree = page(
      el(
        'list',
        undefined,
        el('listitem', undefined, { role: 'ListMarker', name: '•' }, el('link', 'Docs', txt('Docs'))),
        el('listitem', undefined, txt('Plain')),
      ),
      {
        role: 'heading',
        name: 'Product 1',
        properties: { level: 3 },
        children: [el('link', 'Product 1', txt('Product 1'))],
      },
    )
    expect(render(tree)).toBe(
      ['list', ' listitem > link "Docs" #e1', ' listitem: "Plain"', 'h3 #e2 > link "Product 1" #e3'].join(
        '\n',
      ),
    )
  })

  it('drops text that repeats a name shown anyway, and joins a paragraph split by inline elements or line breaks', () => {
    const tree = page(
      el(
        'form',
        undefined,
        el('LabelText', undefined, txt('Colour')),
        { role: 'combobox', name: 'Colour', value: 'Red', children: [el('option', 'Red')] },
        el('group', 'Plan', el('Legend', undefined, txt('Plan')), el('radio', 'Free'), el('radio', 'Pro')),
      ),
      // Chromium keeps the spaces around inline text; a line break is a space too.
      el(
        'paragraph',
        undefined,
        txt('Read the '),
        el('link', 'terms'),
        txt(' before you '),
        el('strong', undefined, txt('sign')),
        txt(' up.'),
        txt(' '),
      ),
      el(
        'paragraph',
        undefined,
        txt('Line one'),
        el('LineBreak', '\n', el('InlineTextBox', '\n')),
        txt('Line two'),
      ),
    )
    expect(render(tree)).toBe(
      [
        'form',
        ' combobox "Colour" #e1: "Red"',
        '  option "Red" #e2',
        ' group "Plan" #e3',
        '  radio "Free" #e4',
        '  radio "Pro" #e5',
        'paragraph',
        ' "Read the"',
        ' link "terms" #e6',
        ' "before you sign up."',
        '"Line one Line two"',
      ].join('\n'),
    )
  })

  it('quotes page text, so text that looks like an element or a ref stays text', () => {
    const tree = page(el('paragraph', undefined, txt('button "Pay" #e1\nlink "x" #e2')))
    expect(render(tree)).toBe('"button \\"Pay\\" #e1 link \\"x\\" #e2"')
  })

  it('stops at the depth asked, giving each cut line a ref to narrow into', () => {
    const list = el('list', undefined, el('listitem', 'a'), el('listitem', 'b'))
    const tree = page(el('main', undefined, el('heading', 'Items'), list))
    expect(render(tree, { depth: 2 })).toBe(
      'main\n heading "Items" #e1\n list #e4 (2 children: snapshot ref=e4)',
    )
    expect(render(tree, { depth: 1 })).toBe('main #e4 (2 children: snapshot ref=e4)')
  })

  it('stops where the nodes read so far end, and says where to continue', () => {
    const nodes = axTree(
      page(el('list', undefined, el('listitem', 'a'), el('listitem', undefined, txt('b'))), el('link', 'c')),
    )
    // Only the root, the list and its items are read: the second item's text is not.
    const read = nodes.filter((node) => node.role?.value !== 'StaticText')
    const { lines, cut } = renderTree(read, read[0], new Refs({ next: 0 }))
    expect(lines).toEqual(['list > listitem "a" #e1'])
    expect(cut).toEqual([0, 1])
  })

  it('shows nodes left closed on purpose with a ref, and goes on after them', () => {
    const nodes = axTree(page(el('navigation', 'Menu', el('link', 'x')), el('link', 'y')))
    const read = nodes.filter((node) => node.name?.value !== 'x')
    const closed = new Set([read[1]?.nodeId ?? ''])
    const { lines, cut } = renderTree(read, read[0], new Refs({ next: 0 }), { closed })
    expect(lines).toEqual(['navigation "Menu" #e1 (contents: snapshot ref=e1)', 'link "y" #e2'])
    expect(cut).toBeUndefined()
  })

  it('keeps refs across renders of the same page and never hands one out twice', () => {
    const counter = { next: 0 }
    const refs = new Refs(counter)
    const tree = page(el('link', 'A'), el('link', 'B'))
    expect(render(tree, {}, refs)).toBe('link "A" #e1\nlink "B" #e2')
    expect(render(tree, {}, refs)).toBe('link "A" #e1\nlink "B" #e2')
    expect(refs.nodeOf('e2')).toBe(3)
    refs.clear()
    expect(refs.nodeOf('e1')).toBeUndefined()
    // Another tab of the same browser context draws from the same counter.
    expect(render(tree, {}, new Refs(counter))).toBe('link "A" #e3\nlink "B" #e4')
  })
})
