import type { Flash } from "../auth/sessions.js";
import { type HtmlValue, type SafeHtml, html, raw } from "./html.js";
import { STYLES } from "./styles.js";

/** The pages in the sidebar, in order. */
export type Section = "overview" | "jobs" | "queues" | "failures" | "schedules" | "workflows" | "promises" | "promiseSchedules" | "observers" | "audit";

/** The sections only a server with a promise store shows. */
const PROMISE_SECTIONS: ReadonlySet<Section> = new Set(["promises", "promiseSchedules"]);

const ICONS: Record<Section, string> = {
  overview: '<path d="M3 13h4v8H3zM10 8h4v13h-4zM17 3h4v18h-4z"/>',
  jobs: '<path d="M4 6h16M4 12h16M4 18h16"/>',
  queues: '<path d="M3 7h18M3 12h13M3 17h8"/>',
  failures: '<path d="M12 3 2 20h20L12 3zM12 10v4M12 17v.5"/>',
  schedules: '<circle cx="12" cy="12" r="9"/><path d="M12 7v5l3 2"/>',
  workflows: '<circle cx="6" cy="6" r="2.5"/><circle cx="18" cy="12" r="2.5"/><circle cx="6" cy="18" r="2.5"/><path d="M8.5 6.5 15.5 11M8.5 17.5l7-4.5"/>',
  promises: '<circle cx="12" cy="12" r="9"/><path d="m8 12.5 2.5 2.5L16 9.5"/>',
  promiseSchedules: '<rect x="3" y="5" width="18" height="16" rx="2"/><path d="M3 10h18M8 3v4M16 3v4M10 15.5l1.5 1.5 3-3"/>',
  observers: '<path d="M2 12s3.5-7 10-7 10 7 10 7-3.5 7-10 7S2 12 2 12z"/><circle cx="12" cy="12" r="3"/>',
  audit: '<path d="M7 3h10l3 3v15H4V3zM8 9h8M8 13h8M8 17h5"/>',
};

const NAV: readonly [Section, string, string][] = [
  ["overview", "Overview", "/"],
  ["jobs", "Jobs", "/jobs"],
  ["queues", "Queues", "/queues"],
  ["failures", "Failures", "/failures"],
  ["schedules", "Schedules", "/schedules"],
  ["workflows", "Workflows", "/workflows"],
  ["promises", "Promises", "/promises"],
  ["promiseSchedules", "Promise schedules", "/promise-schedules"],
  ["observers", "Observers", "/observers"],
  ["audit", "Audit log", "/audit"],
];

/** Facts the frame shows on every page. */
export interface Frame {
  readonly title: string;
  readonly appTitle: string;
  readonly section: Section | null;
  readonly crumbs?: readonly [string, string][];
  readonly actor: string | null;
  readonly canSignIn: boolean;
  readonly csrf: string;
  readonly flash: Flash | null;
  readonly nonce: string;
  readonly store: string;
  readonly worker: string | null;
  /** Dead-lettered + quarantined, for the sidebar badge. */
  readonly failures: number | null;
  readonly executing: number | null;
  /** The server has a promise store: the navigation shows its pages. */
  readonly promises: boolean;
}

// Confirmation before every operator action (the server refuses a POST without `_confirmed`),
// live refresh of the page's [data-live] regions when the server says counts changed, and tag
// completion for the jobs filter.
const SCRIPT = `
document.addEventListener("submit", function (e) {
  var f = e.target, m = f.getAttribute("data-confirm");
  if (!m) return;
  if (!window.confirm(m)) { e.preventDefault(); return; }
  var c = f.querySelector("input[name=_confirmed]"); if (c) c.value = "1";
});
(function () {
  var ind = document.querySelector("[data-live-indicator]");
  if (!window.EventSource || !document.querySelector("[data-live]")) return;
  var version = null, busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "x-belay-live": "1" }, credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (text) {
      if (!text) return;
      var doc = new DOMParser().parseFromString(text, "text/html");
      document.querySelectorAll("[data-live]").forEach(function (el) {
        var next = doc.querySelector('[data-live="' + el.getAttribute("data-live") + '"]');
        if (next && next.innerHTML !== el.innerHTML) el.innerHTML = next.innerHTML;
      });
    }).catch(function () {}).then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var es = new EventSource("/live");
  es.addEventListener("change", function (e) {
    var v = JSON.parse(e.data).version;
    if (version !== null && v !== version) refresh();
    version = v;
  });
  es.onopen = function () { if (ind) { ind.classList.add("on"); ind.lastChild.textContent = "Live"; } };
  es.onerror = function () { if (ind) { ind.classList.remove("on"); ind.lastChild.textContent = "Reconnecting"; } };
})();
(function () {
  var input = document.querySelector("input[data-tag-suggest]"), list = document.getElementById("tag-suggestions");
  if (!input || !list) return;
  var last = null;
  input.addEventListener("input", function () {
    var text = input.value, at = text.indexOf("="), q = at < 0 ? "prefix=" + encodeURIComponent(text)
      : "key=" + encodeURIComponent(text.slice(0, at)) + "&prefix=" + encodeURIComponent(text.slice(at + 1));
    if (q === last) return; last = q;
    fetch("/tags/suggest?" + q, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (d) {
      list.innerHTML = "";
      d.suggestions.forEach(function (s) { var o = document.createElement("option"); o.value = s; list.appendChild(o); });
    }).catch(function () {});
  });
})();
`;

const LOGO = raw(
  '<svg width="26" height="26" viewBox="0 0 32 32" aria-hidden="true"><rect width="32" height="32" rx="8" fill="#3d5afe"/><path d="M9 22.5c3-1 4.5-3.5 5.5-7s2.5-6 7.5-6.5" fill="none" stroke="#fff" stroke-width="2.6" stroke-linecap="round"/><circle cx="9" cy="22.5" r="2.6" fill="#fff"/><circle cx="22" cy="9" r="2.6" fill="#c7d2fe"/></svg>',
);

function icon(section: Section): SafeHtml {
  return raw(`<svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.8" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">${ICONS[section]}</svg>`);
}

/** A whole dashboard page: sidebar, top bar, flash, content. */
export function page(frame: Frame, content: HtmlValue): SafeHtml {
  const nav = NAV.filter(([section]) => frame.promises || !PROMISE_SECTIONS.has(section)).map(([section, label, href]) => {
    const count =
      section === "failures" && frame.failures
        ? html`<span class="cnt bad">${frame.failures}</span>`
        : section === "jobs" && frame.executing
          ? html`<span class="cnt" title="executing">${frame.executing}</span>`
          : "";
    return html`<a href="${href}" class="${frame.section === section ? "on" : ""}"${frame.section === section ? raw(' aria-current="page"') : ""}>${icon(section)}${label}${count}</a>`;
  });
  const who = frame.actor
    ? html`<span class="avatar">${frame.actor.slice(0, 1)}</span><span>Signed in as <b>${frame.actor}</b></span>
<form method="post" action="/logout" class="act"><input type="hidden" name="_csrf" value="${frame.csrf}"><button class="btn btn-sm" type="submit">Sign out</button></form>`
    : frame.canSignIn
      ? html`<span>Read-only</span><a class="btn btn-sm" href="/login">Sign in</a>`
      : html`<span>Read-only</span>`;
  const crumbs = frame.crumbs?.length
    ? html`<div class="crumbs">${frame.crumbs.map(([label, href], i) => html`${i > 0 ? " / " : ""}<a href="${href}">${label}</a>`)}</div>`
    : "";
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${frame.title} · ${frame.appTitle}</title>
<style nonce="${frame.nonce}">${raw(STYLES)}</style></head>
<body><div class="shell">
<aside class="side">
  <div class="brand">${LOGO}<div>${frame.appTitle}<small>background jobs</small></div></div>
  <nav class="nav">${nav}</nav>
  <div class="side-foot">
    <div class="row"><span>Store</span><b>${frame.store}</b></div>
    <div class="row"><span>Worker</span><b>${frame.worker ?? "none embedded"}</b></div>
    <div class="row"><span class="live" data-live-indicator><i></i><span>Connecting</span></span></div>
  </div>
</aside>
<div class="main">
  <header class="top"><div>${crumbs}<h1>${frame.title}</h1></div><div class="who">${who}</div></header>
  ${frame.flash ? html`<div class="flash ${frame.flash.kind}" role="status">${frame.flash.message}</div>` : ""}
  <main class="content">${content}</main>
</div></div>
<datalist id="tag-suggestions"></datalist>
<script nonce="${frame.nonce}">${raw(SCRIPT)}</script>
</body></html>`;
}

/** The sign-in page (no sidebar). */
export function loginPage(options: { appTitle: string; nonce: string; error: string | null; next: string; csrf: string }): SafeHtml {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Sign in · ${options.appTitle}</title><style nonce="${options.nonce}">${raw(STYLES)}</style></head>
<body><form class="login" method="post" action="/login">
<div class="brand plain">${LOGO}<div>${options.appTitle}</div></div>
<h1>Sign in</h1>
<p class="notice">Paste an API token. Viewing needs none; operator actions use the token's permissions, and the audit log records its name.</p>
${options.error ? html`<div class="flash error">${options.error}</div>` : ""}
<input type="hidden" name="_csrf" value="${options.csrf}"><input type="hidden" name="next" value="${options.next}">
<input type="password" name="token" placeholder="Token secret" autocomplete="current-password" autofocus required>
<button class="btn btn-primary" type="submit">Sign in</button>
<a class="notice" href="/">Continue read-only →</a>
</form></body></html>`;
}
