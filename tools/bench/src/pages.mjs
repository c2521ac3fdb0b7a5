// Pages of the browser bench that the browser server's tests drive too (one generator, one page).

/**
 * A 1 MiB product catalogue: a header with a search box and 22 links, then 297 sections of 6
 * products each. Every product carries 4 controls (its title link, a quantity field, "Add to cart
 * N", "Wishlist N") and every section a "See all" link: 7,448 interactive elements, and 2,080
 * children of `main` once the section wrappers fold away (a heading and 6 articles a section, and
 * the page's h1).
 * Each section's "See all" link sits in its heading.
 */
export function cataloguePage() {
  const sections = []
  let product = 0
  for (let section = 1; section <= 297; section++) {
    const cards = []
    for (let slot = 0; slot < 6; slot++) {
      product++
      cards.push(
        `<article class="card rounded-lg border bg-white p-4 shadow-sm">` +
          `<h3 class="text-sm font-medium"><a href="#p${product}" id="p${product}" class="hover:underline">Product ${product}</a></h3>` +
          `<p class="mt-1 text-sm text-gray-500">A short description of product ${product}.</p>` +
          `<p class="mt-2 font-medium">Price: $${(9.5 + product * 0.25).toFixed(2)}</p>` +
          `<label class="block text-xs">Quantity <input type="number" min="1" value="1" class="w-16 rounded"></label>` +
          `<button type="button" class="add rounded-md bg-indigo-600 px-3 py-2 text-white" data-id="${product}">Add to cart ${product}</button>` +
          `<button type="button" class="wish text-xs underline">Wishlist ${product}</button>` +
          '</article>',
      )
    }
    sections.push(
      `<section class="mx-auto max-w-7xl px-4 py-6" id="s${section}"><h2 class="text-xl font-bold">Section ${section} <a href="/section/${section}" class="text-sm">See all in section ${section}</a></h2>` +
        `${cards.join('')}</section>`,
    )
  }
  const links = []
  for (let index = 1; index <= 22; index++)
    links.push(`<a href="/category/${index}" class="px-2 text-sm">Category ${index}</a>`)
  const script = `<script>
let items = 0
document.addEventListener('click', (event) => {
  const button = event.target.closest('button.add')
  if (!button) return
  items++
  document.getElementById('cart').textContent = 'Cart: ' + items + ' (last: product ' + button.dataset.id + ')'
})
</script>`
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Catalogue</title></head><body>' +
    `<header class="sticky top-0 border-b bg-white"><nav aria-label="Categories"><input type="search" aria-label="Search products">${links.join('')}</nav><p id="cart" role="status">Cart: 0</p></header>` +
    `<main class="catalogue"><h1 class="text-2xl font-bold">Catalogue</h1>${sections.join('')}</main>${script}</body></html>`
  )
}

/** A sign-up form: text fields, a checkbox, a select, a textarea and a submit button. */
export function formPage() {
  return (
    '<!doctype html><html><head><meta charset="utf-8"><title>Form</title></head><body><h1>Sign up</h1>' +
    '<form action="/submitted" method="get">' +
    '<label>Name <input name="name" type="text"></label> <label>Email <input name="email" type="email"></label>' +
    '<label><input name="agree" type="checkbox"> I agree</label>' +
    '<label>Colour <select name="colour"><option value="r">Red</option><option value="g">Green</option><option value="b">Blue</option></select></label>' +
    '<label>Notes <textarea name="notes"></textarea></label><button type="submit">Send</button></form></body></html>'
  )
}

/**
 * A documentation page shaped like a library's one-page reference (Underscore's, say): a sidebar of
 * 12 lists of function links, then a section a function, each a heading, a signature in code and
 * two paragraphs of prose with inline code and links. Few elements for its size and much text:
 * about three accessibility nodes an element, where a catalogue has one.
 */
export function docsPage(functions = 240) {
  const names = Array.from({ length: functions }, (_, index) => `fn${index + 1}`)
  const groups = []
  for (let group = 0; group < 12; group++) {
    const items = names
      .filter((_, index) => index % 12 === group)
      .map((name) => `<li>- <a href="#${name}">${name}</a></li>`)
    groups.push(
      `<a href="#group${group + 1}" class="toc_title">Group ${group + 1}</a><ul class="toc_section">${items.join('')}</ul>`,
    )
  }
  const sections = names.map(
    (name, index) =>
      `<p id="${name}"><b class="header">${name}</b><code>_.${name}(list, iteratee, [context])</code> <span class="alias">Alias: <b>${name}All</b></span><br>` +
      `Iterates over a <b>list</b> of elements, yielding each in turn to an <b>iteratee</b> function. The <b>iteratee</b> is bound to the <b>context</b> object, if one is passed. Each invocation of <b>iteratee</b> is called with three arguments: <code>(element, index, list)</code>. Section ${index + 1} of the reference.</p>` +
      `<pre>_.${name}([1, 2, 3], alert);\n=&gt; alerts each number in turn...</pre>` +
      `<p>See also <a href="#fn${((index + 1) % functions) + 1}">fn${((index + 1) % functions) + 1}</a>, and the <a href="https://example.org/${name}">notes on ${name}</a>. Returns the <em>list</em> for chaining.</p>`,
  )
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Reference</title></head><body>' +
    `<div id="sidebar" class="interface"><a class="toc_title" href="#">Library (1.0)</a><input type="text" placeholder="Filter" aria-label="Filter">${groups.join('')}</div>` +
    `<div class="container"><h1>Reference</h1>${sections.join('')}</div></body></html>`
  )
}
