import type { View } from "./components.js";
import { type HtmlValue, type SafeHtml, html } from "./html.js";

/** What a form was filled with (to show it again next to its error). */
export type Draft = Readonly<Record<string, string>>;

/** The hidden fields every operator form carries: CSRF token, confirmation, the page to come back to. */
export function formGuards(view: View, back: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${view.csrf}"><input type="hidden" name="_back" value="${back}"><input type="hidden" name="_confirmed" value="">`;
}

/** A labelled field of an editing form, with a hint under it. */
export function field(label: string, control: HtmlValue, hint: HtmlValue = null, wide = false): SafeHtml {
  return html`<label class="field${wide ? " wide" : ""}"><span>${label}</span>${control}${hint ? html`<small>${hint}</small>` : ""}</label>`;
}

/** A text input holding the draft's value of `name`. */
export function textInput(draft: Draft, name: string, options: { placeholder?: string; required?: boolean; list?: string; readonly?: boolean } = {}): SafeHtml {
  return html`<input type="text" name="${name}" id="f-${name}" value="${draft[name] ?? ""}"${options.placeholder ? html` placeholder="${options.placeholder}"` : ""}${
    options.list ? html` list="${options.list}"` : ""
  }${options.required ? html` required` : ""}${options.readonly ? html` readonly` : ""} autocomplete="off" spellcheck="false">`;
}

/**
 * A select of `options` (value, label) with the draft's value selected. A draft value that is
 * not among them is offered too, marked, so that saving never silently picks another one.
 */
export function select(draft: Draft, name: string, given: readonly (readonly [string, string])[]): SafeHtml {
  const current = draft[name];
  const options = current !== undefined && current !== "" && !given.some(([value]) => value === current) ? [[current, `${current} (unknown here)`] as const, ...given] : given;
  return html`<select name="${name}" id="f-${name}">${options.map(
    ([value, label]) => html`<option value="${value}"${draft[name] === value ? html` selected` : ""}>${label}</option>`,
  )}</select>`;
}

/** A JSON text area. */
export function jsonArea(draft: Draft, name: string, placeholder: string): SafeHtml {
  return html`<textarea name="${name}" id="f-${name}" rows="7" spellcheck="false" placeholder="${placeholder}">${draft[name] ?? ""}</textarea>`;
}

/** Comma- or newline-separated tags as a list (empty entries dropped). */
export function tagsOf(text: string | undefined): string[] {
  return (text ?? "")
    .split(/[,\n]/)
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}
