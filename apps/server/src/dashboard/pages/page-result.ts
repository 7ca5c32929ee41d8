import type { SafeHtml } from "../html.js";
import type { Section } from "../layout.js";

/** What a page renders: the frame fills in the rest. */
export interface PageResult {
  readonly title: string;
  readonly section: Section | null;
  readonly crumbs?: readonly [string, string][];
  readonly content: SafeHtml;
  readonly status?: 200 | 404 | 422;
}
