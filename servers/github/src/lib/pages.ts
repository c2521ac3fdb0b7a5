/** True when a GitHub `Link` header has a next page. */
export function hasNextPage(link: string | undefined): boolean {
  return link !== undefined && /<[^>]+>;\s*rel="next"/.test(link)
}

/** The `last` page number of a `Link` header, when GitHub gives one. */
export function lastPage(link: string | undefined): number | undefined {
  const match = link?.match(/<([^>]+)>;\s*rel="last"/)
  if (!match?.[1]) return undefined
  const page = Number(new URL(match[1], 'https://github.invalid').searchParams.get('page'))
  return Number.isInteger(page) && page > 0 ? page : undefined
}
