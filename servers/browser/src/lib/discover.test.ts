import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { discoverBrowser, NoBrowserError } from './discover.js'

describe('discoverBrowser', () => {
  const only =
    (...paths: string[]) =>
    (path: string) =>
      paths.includes(path)

  it('takes the configured path first, and refuses one that does not exist', () => {
    expect(
      discoverBrowser({
        executablePath: '/opt/x/chrome',
        exists: only('/opt/x/chrome', '/usr/bin/chromium'),
      }),
    ).toBe('/opt/x/chrome')
    expect(() => discoverBrowser({ executablePath: '/missing', exists: only('/usr/bin/chromium') })).toThrow(
      /No browser at --executable-path/,
    )
  })

  it("prefers puppeteer's cache (newest version first) to the system browser", () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'keel-puppeteer-cache-'))
    try {
      for (const version of ['linux-120.0.1', 'linux-131.0.2']) {
        mkdirSync(join(cacheDir, 'chrome', version, 'chrome-linux64'), { recursive: true })
        writeFileSync(join(cacheDir, 'chrome', version, 'chrome-linux64', 'chrome'), '')
      }
      const newest = join(cacheDir, 'chrome', 'linux-131.0.2', 'chrome-linux64', 'chrome')
      expect(
        discoverBrowser({
          cacheDir,
          platform: 'linux',
          exists: (path) => existsSync(path) || path === '/usr/bin/chromium',
        }),
      ).toBe(newest)
    } finally {
      rmSync(cacheDir, { recursive: true, force: true })
    }
  })

  it.each([
    ['linux', '/usr/bin/google-chrome'],
    ['darwin', '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome'],
  ] as const)('finds the usual %s path', (platform, path) => {
    expect(discoverBrowser({ platform, cacheDir: '/nonexistent', exists: only(path) })).toBe(path)
  })

  it('finds Chrome under Program Files on Windows', () => {
    const path = join('C:/Program Files', 'Google/Chrome/Application/chrome.exe')
    expect(
      discoverBrowser({
        platform: 'win32',
        cacheDir: '/nonexistent',
        env: { PROGRAMFILES: 'C:/Program Files' },
        exists: only(path),
      }),
    ).toBe(path)
  })

  it('says how to get a browser when there is none', () => {
    expect(() =>
      discoverBrowser({ platform: 'linux', cacheDir: '/nonexistent', exists: () => false }),
    ).toThrow(NoBrowserError)
    expect(() =>
      discoverBrowser({ platform: 'linux', cacheDir: '/nonexistent', exists: () => false }),
    ).toThrow(/npx @puppeteer\/browsers install chrome@stable/)
  })
})
