// Where outbox messages go, as the protocol writes it in a promise's `resonate:target` and a
// listener's `address`:
//
// - `poll://uni@group/id` — the one poller connected as (group, id).
// - `poll://any@group/id` — that poller when it is connected, else any poller of the group.
// - `poll://any@group` — any poller of the group.
// - `http://…`, `https://…` — POST the message as JSON to that URL.
//
// Anything else (`gcps://`, `bash://`, …) this server cannot deliver.

/** A parsed delivery address. */
export type DeliveryAddress =
  | { readonly kind: "poll"; readonly mode: "uni" | "any"; readonly group: string; readonly id: string | null }
  | { readonly kind: "http"; readonly url: string }
  | { readonly kind: "unsupported"; readonly scheme: string };

const POLL = /^poll:\/\/(uni|any)@([^/]+)(?:\/(.+))?$/s;

/** Reads an address; a `poll://` address that does not parse, or `uni` without an id, is `unsupported`. */
export function parseAddress(address: string): DeliveryAddress {
  const poll = POLL.exec(address);
  if (poll !== null) {
    // Group and id are the poller's own, as it connected (`/poll/:group/:id`, decoded): the SDK
    // writes them into its addresses as they are, not percent-encoded.
    const [, mode, group = "", id = null] = poll;
    if (mode === "uni" && id === null) return { kind: "unsupported", scheme: "poll" };
    return { kind: "poll", mode: mode as "uni" | "any", group, id };
  }
  if (/^https?:\/\//i.test(address)) {
    try {
      return { kind: "http", url: new URL(address).toString() };
    } catch {
      return { kind: "unsupported", scheme: "http" };
    }
  }
  return { kind: "unsupported", scheme: /^([a-z][a-z0-9+.-]*):/i.exec(address)?.[1] ?? "" };
}
