import { describe, expect, it } from "vitest";
import { escapeHtml, html, raw } from "./html.js";
import { formatDuration, formatRelative, shortId } from "./format.js";
import { safeBack } from "./query.js";

describe("html", () => {
  it("escapes interpolated text, keeps nested templates and raw markup, joins lists, drops null and booleans", () => {
    const name = `<script>alert("x")</script>`;
    const out = html`<p title="${name}">${name}${html`<b>${"&"}</b>`}${raw("<i>ok</i>")}${["a", html`<br>`, 1]}${null}${undefined}${false}</p>`;
    expect(out.value).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;<b>&amp;</b><i>ok</i>a<br>1</p>',
    );
    expect(escapeHtml("it's")).toBe("it&#39;s");
  });
});

describe("formatting", () => {
  it("durations use the largest sensible unit", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(42_000)).toBe("42 s");
    expect(formatDuration(185_000)).toBe("3 min 5 s");
    expect(formatDuration(3 * 3_600_000 + 12 * 60_000)).toBe("3 h 12 min");
    expect(formatDuration(2 * 86_400_000 + 4 * 3_600_000)).toBe("2 d 4 h");
  });

  it("relative times read naturally both ways", () => {
    expect(formatRelative(1_000, 61_000)).toBe("1 min ago");
    expect(formatRelative(61_000, 1_000)).toBe("in 1 min");
    expect(formatRelative(1_000, 1_400)).toBe("just now");
  });

  it("long ids shorten in the middle", () => {
    expect(shortId("short")).toBe("short");
    expect(shortId("heartbeat@2024-01-01T00:00:10.000Z", 20)).toBe("heartbeat@…0:10.000Z");
  });
});

describe("redirect targets", () => {
  it("only same-origin absolute paths are followed", () => {
    expect(safeBack("/jobs?x=1")).toBe("/jobs?x=1");
    for (const bad of ["//evil.example", "https://evil.example", "/\\evil", "jobs", 42, undefined]) expect(safeBack(bad)).toBe("/");
  });
});
