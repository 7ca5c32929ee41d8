import { PROMISE_TAGS, type PromiseState, type PromiseValue, type TaskState } from "@belay/contract";
import { shortId } from "./format.js";
import { type SafeHtml, html } from "./html.js";

// The pieces the durable-promise pages share: state badges, links, tags and values.

/** How each promise state is named on screen. */
export const PROMISE_STATE_LABELS: Readonly<Record<PromiseState, string>> = {
  pending: "Pending",
  resolved: "Resolved",
  rejected: "Rejected",
  rejected_canceled: "Canceled",
  rejected_timedout: "Timed out",
};

// The job states' colours, reused: pending reads as scheduled, resolved as succeeded, and so on.
const PROMISE_STATE_CLASS: Readonly<Record<PromiseState, string>> = {
  pending: "scheduled",
  resolved: "succeeded",
  rejected: "dead",
  rejected_canceled: "cancelled",
  rejected_timedout: "quarantined",
};

/** How each task state is named on screen. */
export const TASK_STATE_LABELS: Readonly<Record<TaskState, string>> = {
  pending: "Pending",
  acquired: "Acquired",
  suspended: "Suspended",
  halted: "Halted",
  fulfilled: "Fulfilled",
};

const TASK_STATE_CLASS: Readonly<Record<TaskState, string>> = {
  pending: "scheduled",
  acquired: "leased",
  suspended: "awaiting",
  halted: "quarantined",
  fulfilled: "succeeded",
};

/** A promise state as a coloured badge. */
export function promiseBadge(state: PromiseState): SafeHtml {
  return html`<span class="badge s-${PROMISE_STATE_CLASS[state]}" data-state="${state}">${PROMISE_STATE_LABELS[state]}</span>`;
}

/** A task state as a coloured badge, with its version when given. */
export function taskBadge(state: TaskState, version?: number): SafeHtml {
  return html`<span class="badge s-${TASK_STATE_CLASS[state]}" data-task-state="${state}">${TASK_STATE_LABELS[state]}${version === undefined ? "" : html` <small>v${version}</small>`}</span>`;
}

/** The path of a promise's page. */
export function promisePath(id: string): string {
  return `/promises/${encodeURIComponent(id)}`;
}

/** A link to a promise, its id shortened in the middle for dense tables. */
export function promiseLink(id: string, max = 34): SafeHtml {
  return html`<a class="mono" href="${promisePath(id)}" title="${id}">${shortId(id, max)}</a>`;
}

/** The promises list filtered by one tag. */
export function promisesByTag(key: string, value: string): string {
  return `/promises?tag=${encodeURIComponent(`${key}=${value}`)}`;
}

/** The address of the worker group that executes it (`resonate:target`), or `null`. */
export function targetOf(tags: Readonly<Record<string, string>>): string | null {
  return tags[PROMISE_TAGS.target] ?? null;
}

/** A target address, ellipsised when long (the whole address stays in the title). */
export function targetText(target: string | null): SafeHtml {
  if (target === null) return html`<span class="muted">—</span>`;
  return html`<span class="mono addr" title="${target}">${target}</span>`;
}

/** A promise's tags as links to the promises carrying them; `skipProtocol` leaves out `resonate:*`. */
export function promiseTags(tags: Readonly<Record<string, string>>, options: { max?: number; skipProtocol?: boolean } = {}): SafeHtml {
  const entries = Object.entries(tags)
    .filter(([key]) => !(options.skipProtocol && key.startsWith("resonate:")))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return html``;
  const max = options.max ?? entries.length;
  const shown = entries
    .slice(0, max)
    .map(([key, value]) => html`<a class="tag" href="${promisesByTag(key, value)}" title="${key}=${value}"><span class="tk">${key}=</span>${shortId(value, 40)}</a>`);
  return html`<span class="tags">${shown}${entries.length > max ? html`<span class="more">+${entries.length - max}</span>` : ""}</span>`;
}

/**
 * The tag filters of a search (`key=value` each) as the protocol's tag map, or the problem with
 * them: a tag without `=`, with an empty key or value, or a key given twice with two values (no
 * promise could match both).
 */
export function parseTagFilters(values: readonly string[]): { readonly tags: Record<string, string>; readonly problem: string | null } {
  const tags: Record<string, string> = {};
  for (const text of values) {
    const at = text.indexOf("=");
    if (at <= 0 || at === text.length - 1) return { tags, problem: `tag: "${text}" must be key=value` };
    const key = text.slice(0, at);
    const value = text.slice(at + 1);
    if (Object.hasOwn(tags, key) && tags[key] !== value) return { tags, problem: `tag: ${key} is given twice with different values` };
    tags[key] = value;
  }
  return { tags, problem: null };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The data of a param or value as a reader wants it: the SDK sends base64 text, so text that is
 * base64 of UTF-8 is shown decoded (pretty-printed when it is JSON), anything else as stored.
 */
export function readableData(data: string): { readonly text: string; readonly decoded: boolean } {
  if (data.length === 0 || data.length % 4 !== 0 || !BASE64.test(data)) return { text: data, decoded: false };
  let text: string;
  try {
    text = strictUtf8.decode(Buffer.from(data, "base64"));
  } catch {
    return { text: data, decoded: false };
  }
  // Text with control characters is more likely binary than something a person reads.
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(text)) return { text: data, decoded: false };
  try {
    return { text: JSON.stringify(JSON.parse(text), null, 2), decoded: true };
  } catch {
    return { text, decoded: true };
  }
}

/** A param or value: its headers and its data (decoded when it is base64 text). */
export function promiseValue(label: string, value: PromiseValue): SafeHtml {
  const headers = Object.entries(value.headers ?? {});
  const data = value.data === undefined ? null : readableData(value.data);
  return html`<h3 class="notice">${label}</h3>
${headers.length === 0 ? "" : html`<dl class="kv small">${headers.map(([k, v]) => html`<dt class="mono">${k}</dt><dd class="mono">${v}</dd>`)}</dl>`}
${data === null ? html`<p class="notice">No data.</p>` : html`<pre class="json">${data.text}</pre>${data.decoded ? html`<p class="notice">Decoded from base64.</p>` : ""}`}`;
}
