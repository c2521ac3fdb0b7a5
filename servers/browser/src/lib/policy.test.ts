import { describe, expect, it } from 'vitest'
import { isPrivateAddress, parseOriginPattern, UrlPolicy } from './policy.js'

describe('isPrivateAddress', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.255.0.9', true],
    ['10.0.0.1', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['8.8.8.8', false],
    ['93.184.216.34', false],
    ['::1', true],
    ['::', true],
    ['[::1]', true],
    ['fd00::1', true],
    ['fc12:3456::1', true],
    ['fe80::1', true],
    ['fe80::1%eth0', true],
    ['::ffff:127.0.0.1', true],
    ['::ffff:7f00:1', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::10.0.0.1', true],
    ['2606:4700::1111', false],
    ['example.com', false],
  ])('%s → %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected)
  })
})

describe('origin patterns', () => {
  it('matches an exact origin with the default port made explicit', () => {
    const pattern = parseOriginPattern('https://example.com')
    expect(pattern.matches(new URL('https://example.com:443/a'))).toBe(true)
    expect(pattern.matches(new URL('http://example.com/'))).toBe(false)
    expect(pattern.matches(new URL('https://example.com:8443/'))).toBe(false)
    expect(pattern.matches(new URL('https://sub.example.com/'))).toBe(false)
  })

  it('matches a bare host on any scheme and port, and a wildcard on subdomains only', () => {
    expect(parseOriginPattern('example.com').matches(new URL('http://example.com:81/'))).toBe(true)
    const wildcard = parseOriginPattern('*.example.com')
    expect(wildcard.matches(new URL('https://a.b.example.com/'))).toBe(true)
    expect(wildcard.matches(new URL('https://example.com/'))).toBe(false)
    expect(wildcard.matches(new URL('https://evilexample.com/'))).toBe(false)
  })

  it.each(['https://example.com/path', 'https://user:pw@example.com', 'not a host!', 'ftp://x'])(
    'refuses %s',
    (source) => {
      expect(() => parseOriginPattern(source)).toThrow()
    },
  )
})

describe('UrlPolicy', () => {
  const resolve = async (host: string) => {
    const table: Record<string, string[]> = {
      'public.test': ['93.184.216.34'],
      'intranet.test': ['10.0.0.5'],
      'mixed.test': ['93.184.216.34', '127.0.0.1'],
      'v6.test': ['::1'],
      localhost: ['127.0.0.1', '::1'],
      'alias.test': ['127.0.0.1'],
      'mapped.test': ['::ffff:127.0.0.1'],
    }
    const found = table[host]
    if (!found) throw new Error('ENOTFOUND')
    return found
  }
  const policy = (options: Partial<ConstructorParameters<typeof UrlPolicy>[0]> = {}) =>
    new UrlPolicy(
      {
        allowedOrigins: [],
        blockedOrigins: [],
        allowPrivateNetwork: false,
        allowFileUrls: false,
        ...options,
      },
      resolve,
    )
  const top = { topLevel: true }
  const sub = { topLevel: false }

  it.each([
    ['https://public.test/', undefined],
    ['http://intranet.test/', 'resolves to a private or loopback address (10.0.0.5)'],
    ['http://mixed.test/', 'resolves to a private or loopback address (127.0.0.1)'],
    ['http://v6.test/', 'resolves to a private or loopback address (::1)'],
    ['http://unknown.test/', 'does not resolve'],
    ['http://localhost:3000/', 'loopback name'],
    ['http://app.localhost/', 'loopback name'],
    ['http://2130706433/', 'private or loopback address'],
    ['ws://127.0.0.1:9222/devtools', 'private or loopback address'],
    ['about:blank', undefined],
    ['about:config', 'about: URLs are refused'],
    ['file:///etc/hostname', 'file: URLs are refused'],
    ['data:text/html,hi', 'top-level data: navigations are refused'],
    ['ftp://public.test/', 'ftp: URLs are refused'],
  ])('judges %s', async (url, reason) => {
    const refusal = await policy().check(url, top)
    if (reason === undefined) expect(refusal).toBeUndefined()
    else expect(refusal?.reason).toContain(reason)
  })

  it('allows data: and blob: for sub-resources only', async () => {
    expect(await policy().check('data:image/png;base64,AAAA', sub)).toBeUndefined()
    expect(await policy().check('blob:https://public.test/uuid', sub)).toBeUndefined()
  })

  it('opens private addresses with --allow-private-network, but the block list still wins', async () => {
    const open = policy({ allowPrivateNetwork: true, blockedOrigins: ['http://127.0.0.1:8080'] })
    expect(await open.check('http://127.0.0.1:3000/', top)).toBeUndefined()
    expect((await open.check('http://127.0.0.1:8080/', top))?.reason).toContain('is blocked')
  })

  it('opens exactly the allowed origins and nothing else', async () => {
    const listed = policy({ allowedOrigins: ['http://127.0.0.1:3000', '*.public.test'] })
    expect(await listed.check('http://127.0.0.1:3000/x', top)).toBeUndefined()
    expect(await listed.check('https://a.public.test/', sub)).toBeUndefined()
    expect((await listed.check('http://127.0.0.1:3001/', top))?.reason).toContain('not in --allowed-origins')
    expect((await listed.check('https://public.test/', sub))?.reason).toContain('not in')
  })

  it('allows file: only with --allow-file-urls', async () => {
    expect(await policy({ allowFileUrls: true }).check('file:///tmp/x.html', top)).toBeUndefined()
  })

  describe('a blocked origin is judged on the address and port it reaches, not its spelling', () => {
    const spellings = [
      'http://127.0.0.1:8080/',
      'http://localhost:8080/',
      'http://LOCALHOST.:8080/',
      'http://[::1]:8080/',
      'http://[::ffff:127.0.0.1]:8080/',
      'http://0.0.0.0:8080/',
      'http://[::]:8080/',
      'http://127.0.0.2:8080/',
      'http://2130706433:8080/',
      'http://0x7f.1:8080/',
      'http://0177.0.0.1:8080/',
      'http://alias.test:8080/',
      'http://mapped.test:8080/',
      'ws://localhost:8080/socket',
      'https://localhost:8080/',
    ]
    for (const blocked of ['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080']) {
      it.each(spellings)(
        `blocks %s for ${blocked}, over --allow-private-network and every allow`,
        async (url) => {
          for (const options of [
            { allowPrivateNetwork: true },
            { allowedOrigins: [new URL(url.replace(/^ws/, 'http')).origin, 'http://127.0.0.1:8080'] },
          ]) {
            const judge = policy({ ...options, blockedOrigins: [blocked] })
            expect((await judge.check(url, top))?.reason).toContain('is blocked (--blocked-origins')
            expect((await judge.check(url, sub))?.reason).toContain('is blocked (--blocked-origins')
            const target = new URL(url)
            const dialled = await judge.dial(target.hostname, Number(target.port), ['http:', 'https:'])
            expect('reason' in dialled && dialled.reason).toContain('is blocked (--blocked-origins')
          }
        },
      )
    }

    it('leaves other ports and other addresses reachable', async () => {
      const judge = policy({ allowPrivateNetwork: true, blockedOrigins: ['http://localhost:8080'] })
      expect(await judge.check('http://127.0.0.1:8081/', top)).toBeUndefined()
      expect(await judge.check('http://10.0.0.5:8080/', top)).toBeUndefined()
      expect(await judge.dial('127.0.0.1', 8081, ['http:'])).toEqual({ address: '127.0.0.1' })
    })

    it('blocks every port of a bare blocked host, by address', async () => {
      const judge = policy({ allowPrivateNetwork: true, blockedOrigins: ['localhost'] })
      expect((await judge.check('http://[::1]:9/', top))?.reason).toContain('is blocked')
      expect('reason' in (await judge.dial('alias.test', 443, ['https:']))).toBe(true)
    })
  })
})
