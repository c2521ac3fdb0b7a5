import { existsSync, readdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** Thrown when no browser is found; the message says how to get one. */
export class NoBrowserError extends Error {
  override name = 'NoBrowserError'
}

export const INSTALL_HINT =
  'Install one with `npx @puppeteer/browsers install chrome@stable`, install Chrome or Chromium, or pass --executable-path (env PUPPETEER_EXECUTABLE_PATH).'

/** Executables inside puppeteer's cache (`~/.cache/puppeteer/chrome/<platform>-<version>/…`), newest first. */
function fromPuppeteerCache(cacheDir: string, platform: NodeJS.Platform): string[] {
  const found: string[] = []
  for (const product of ['chrome', 'chromium', 'chrome-headless-shell']) {
    const base = join(cacheDir, product)
    let versions: string[]
    try {
      versions = readdirSync(base).sort().reverse()
    } catch {
      continue
    }
    for (const version of versions) {
      const root = join(base, version)
      let inner: string[]
      try {
        inner = readdirSync(root)
      } catch {
        continue
      }
      for (const folder of inner) {
        const dir = join(root, folder)
        const candidates =
          platform === 'win32'
            ? [join(dir, 'chrome.exe'), join(dir, 'chrome-headless-shell.exe')]
            : platform === 'darwin'
              ? [
                  join(dir, 'Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing'),
                  join(dir, 'Chromium.app/Contents/MacOS/Chromium'),
                  join(dir, 'chrome-headless-shell'),
                ]
              : [join(dir, 'chrome'), join(dir, 'chrome-headless-shell')]
        found.push(...candidates)
      }
    }
  }
  return found
}

/** The usual places of Chrome and Chromium on each platform. */
export function systemCandidates(platform: NodeJS.Platform, env: NodeJS.ProcessEnv = process.env): string[] {
  if (platform === 'darwin') {
    return [
      '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
      '/Applications/Chromium.app/Contents/MacOS/Chromium',
      '/Applications/Google Chrome Canary.app/Contents/MacOS/Google Chrome Canary',
      join(homedir(), 'Applications/Google Chrome.app/Contents/MacOS/Google Chrome'),
    ]
  }
  if (platform === 'win32') {
    const roots = [env.PROGRAMFILES, env['PROGRAMFILES(X86)'], env.LOCALAPPDATA].filter(
      (root): root is string => Boolean(root),
    )
    return roots.flatMap((root) => [
      join(root, 'Google/Chrome/Application/chrome.exe'),
      join(root, 'Chromium/Application/chrome.exe'),
      join(root, 'Microsoft/Edge/Application/msedge.exe'),
    ])
  }
  return [
    '/usr/bin/google-chrome',
    '/usr/bin/google-chrome-stable',
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/snap/bin/chromium',
    '/opt/google/chrome/chrome',
  ]
}

export interface DiscoverOptions {
  /** --executable-path / PUPPETEER_EXECUTABLE_PATH. */
  executablePath?: string | undefined
  platform?: NodeJS.Platform
  /** puppeteer's cache (PUPPETEER_CACHE_DIR or ~/.cache/puppeteer). */
  cacheDir?: string
  exists?: (path: string) => boolean
  env?: NodeJS.ProcessEnv
}

/**
 * Finds a browser: the configured path, then puppeteer's cache, then the system's Chrome or
 * Chromium. The configured path must exist (no silent fallback when the user named one).
 */
export function discoverBrowser(options: DiscoverOptions = {}): string {
  const exists = options.exists ?? existsSync
  const env = options.env ?? process.env
  const platform = options.platform ?? process.platform
  if (options.executablePath) {
    if (!exists(options.executablePath))
      throw new NoBrowserError(
        `No browser at --executable-path (env PUPPETEER_EXECUTABLE_PATH) ${options.executablePath}. ${INSTALL_HINT}`,
      )
    return options.executablePath
  }
  const cacheDir = options.cacheDir ?? env.PUPPETEER_CACHE_DIR ?? join(homedir(), '.cache', 'puppeteer')
  for (const candidate of [...fromPuppeteerCache(cacheDir, platform), ...systemCandidates(platform, env)]) {
    if (exists(candidate)) return candidate
  }
  throw new NoBrowserError(`No Chrome or Chromium found. ${INSTALL_HINT}`)
}
