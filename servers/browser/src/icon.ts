// The server's icon (`serverInfo.icons`), shipped inline as an SVG data URI: clients fetch nothing.
// A browser window with an address bar and a pointer (16×16 grid, one colour).
export const icon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="1.5" y="2" width="13" height="11" rx="1.5" fill="none" stroke="#4b5563" stroke-width="1.5"/><path d="M1.5 5.5h13" stroke="#4b5563" stroke-width="1.5"/><circle cx="3.75" cy="3.75" r=".6" fill="#4b5563"/><path d="M8 7.5l1.2 4.5 1-1.6 1.6 1.6.8-.8-1.6-1.6 1.6-1z" fill="#4b5563"/></svg>`
