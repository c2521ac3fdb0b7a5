// The server's icon (`serverInfo.icons`), shipped inline as an SVG data URI: clients fetch nothing.
// A placeholder from the template: replace it with your server's own mark (16×16 grid, one colour).
export const icon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="2" y="1.5" width="12" height="13" rx="2" fill="none" stroke="#4b5563" stroke-width="1.5"/><path d="M5 5.5h6M5 8h6M5 10.5h4" stroke="#4b5563" stroke-width="1.5" stroke-linecap="round"/></svg>`
