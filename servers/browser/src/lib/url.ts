/**
 * A URL as the server shows it (results, errors, logs): without the credentials of its userinfo
 * (`http://user:password@host/` is shown as `http://host/`), the way browsers show addresses.
 * Text that does not parse as a URL is returned as it is.
 */
export function shownUrl(url: string): string {
  if (!url.includes('@')) return url
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url
  }
  if (!parsed.username && !parsed.password) return url
  parsed.username = ''
  parsed.password = ''
  return parsed.href
}
