import { type Tag, InvalidInputError } from "@belay/contract";

/** A tag as users write it: `"urgent"` (a label), `"tenant=acme"` (keyed), or `{ key, value }`. */
export type TagInput = string | Tag;

/** Parses tag inputs: `"k=v"` splits at the first `=`; text without `=` is a label. */
export function parseTags(tags: readonly TagInput[], field: string): Tag[] {
  if (!Array.isArray(tags)) throw new InvalidInputError(field, "must be an array of tags");
  return tags.map((tag, i) => {
    if (typeof tag === "string") {
      const at = tag.indexOf("=");
      return at < 0 ? { key: "", value: tag } : { key: tag.slice(0, at), value: tag.slice(at + 1) };
    }
    if (typeof tag === "object" && tag !== null && typeof tag.key === "string" && typeof tag.value === "string") {
      return { key: tag.key, value: tag.value };
    }
    throw new InvalidInputError(`${field}[${i}]`, 'must be "label", "key=value" or { key, value }');
  });
}

/** The text form of a tag: the label itself, or `key=value`. */
export function formatTag(tag: Tag): string {
  return tag.key === "" ? tag.value : `${tag.key}=${tag.value}`;
}
