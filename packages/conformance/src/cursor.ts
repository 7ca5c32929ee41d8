/**
 * Every page of a cursor walk, from the first: `fetch` reads the page after `cursor` (`undefined`
 * for the first page), `next` names the cursor a page ends with (`null` or `undefined` on the
 * last). Bounded by `maxPages`, so a cursor that never ends fails the clause instead of hanging it.
 */
export async function everyPage<P>(
  fetch: (cursor: string | undefined) => Promise<P>,
  next: (page: P) => string | null | undefined,
  maxPages = 100,
): Promise<P[]> {
  const pages: P[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = await fetch(cursor);
    pages.push(page);
    cursor = next(page) ?? undefined;
    if (cursor === undefined) return pages;
  }
  throw new Error(`the cursor never reached a last page in ${maxPages} pages`);
}
