import path from 'node:path'
import { type ToolContext, toolFactory, z } from '@keel-mcp/core'
import type { AllowedDirectories } from '../directories.js'
import {
  isWithin,
  type PathGuard,
  type WalkFileSystem,
  type WalkProblems,
  type WatchHub,
} from '../lib/index.js'

/** What the filesystem tools get as `deps`. */
export interface FsDeps {
  directories: AllowedDirectories
  watchers: WatchHub
  /** The file system walks use (tests inject failures through it); default `node:fs`. */
  walkFileSystem?: WalkFileSystem | undefined
}

/** `defineTool` with the filesystem deps typed. */
export const defineTool = toolFactory<FsDeps>()

/** Response budgets. Every default answer stays well under 256 KiB on the wire (JSON escaping included). */
export const limits = {
  /** read_text_file: text only, no structured copy. */
  textBytes: 192 * 1024,
  /** read_multiple_files, shared by all files (the structured result repeats the text). */
  multipleBytes: 96 * 1024,
  /** read_media_file: base64 grows it by a third; far below the clients' 10 MiB message limit. */
  mediaBytes: 5 * 1024 * 1024,
  /** directory_tree: hard cap whatever max_entries says. */
  treeBytes: 200 * 1024,
  /** search_content page (repeated in the structured result). */
  matchBytes: 64 * 1024,
  /** edit_file diff. */
  diffBytes: 64 * 1024,
} as const

/** The guard for this call: configured directories narrowed by the calling client's roots. */
export function guardOf(context: ToolContext<FsDeps>): Promise<PathGuard> {
  return context.deps.directories.guardFor(context.client)
}

/**
 * How results name a path: relative to the first allowed directory when inside it (that is how a relative path
 * argument resolves, so the model can pass it straight back), absolute otherwise.
 */
export function displayPath(guard: PathGuard, absolute: string): string {
  const first = guard.roots[0]
  if (first === undefined || !isWithin(first, absolute)) return absolute
  const relative = path.relative(first, absolute)
  return relative === '' ? '.' : relative.split(path.sep).join('/')
}

/** Joins a walk result (relative to `base`, `/`-separated) to the display form of `base`. */
export function displayJoin(baseDisplay: string, relative: string): string {
  if (baseDisplay === '.') return relative
  return baseDisplay.endsWith('/') ? baseDisplay + relative : `${baseDisplay}/${relative}`
}

// Argument texts are short on purpose: every word is repeated in every conversation. A text that only
// repeats the argument's name ('Path') is not listed (core drops echoes): the tool's name and description
// say what a path names, the server instructions and list_allowed_directories how relative paths resolve,
// and each page's notice which cursor to pass back.
export const pathArgument = z.string().describe('Path')
/** Searching and listing tools default to the first allowed directory, as a user with one directory expects. */
export const searchRoot = z.string().default('.').describe('Path')
export const cursorArgument = z.string().optional().describe('Cursor')
// `exclude` lists no text (a name or a glob both skip what they match); `include` says it takes globs.
export const globsArgument = (what: string) => z.array(z.string()).optional().describe(what)

// Lower bounds that only guard the server (a page of at least one entry, a non-empty glob or list) are
// checked with refine(): tools/list, which every conversation pays for, does not spell out what no
// caller means to send. Upper bounds are limits the model must know, and stay in the schema.
export const nonEmpty = (value: { length: number }) => value.length > 0
/** A whole number of at least `min`, the bound checked but not listed. */
export const count = (min = 1) =>
  z
    .number()
    .int()
    .refine((value) => value >= min, `must be at least ${min}`)
/** A page size: 1…max, `fallback` when not given. */
export const pageSize = (max: number, fallback: number) => count().max(max).default(fallback)
// The name says what it switches (a model knows .gitignore), and `default: true` that it is on.
export const gitignoreArgument = z.boolean().default(true).describe('Gitignore')
/**
 * A switch that is off unless given. Listed without `default: false`, which is what an absent boolean
 * means to any reader; the tool reads an absent one as false.
 */
export const flag = (what: string) => z.boolean().optional().describe(what)

/** Entries a walk could not read (the text names a few). */
export const skippedShape = z.number().int().optional()

/**
 * An output item as an open object: the catalogue lists a result's keys and their types, the
 * fields of each item are in the text (every schema word costs tokens in every conversation).
 */
export const items = () => z.array(z.looseObject({}) as unknown as z.ZodType<object>)

/** Structured `skipped` count, only when something was. */
export function skippedOf(problems: WalkProblems): { skipped?: number } {
  return problems.count ? { skipped: problems.count } : {}
}

/** A notice line for entries a walk could not read; empty when there were none. */
export function skippedNotice(problems: WalkProblems, baseDisplay: string): string {
  if (!problems.count) return ''
  const samples = problems.samples.map(
    (sample) => `${displayJoin(baseDisplay, sample.path)} (${sample.code})`,
  )
  return `[skipped ${problems.count} unreadable or vanished ${problems.count === 1 ? 'entry' : 'entries'}: ${samples.join(', ')}${problems.count > samples.length ? ', …' : ''}]`
}

/** `text` plus notice lines (each on its own line; empty ones dropped). */
export function withNotices(text: string, ...notices: string[]): string {
  const present = notices.filter(Boolean)
  if (!present.length) return text
  return `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${present.join('\n')}`
}

export function formatBytes(bytes: number): string {
  const [value, unit] =
    bytes >= 1024 * 1024 ? [bytes / 1024 / 1024, 'MiB'] : bytes >= 1024 ? [bytes / 1024, 'KiB'] : [bytes, 'B']
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${unit}`
}
