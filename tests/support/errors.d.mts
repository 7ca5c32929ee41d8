/** The `code` of the error `action` fails with when `coded` recognises it; `undefined` when it succeeds; any other error is thrown. */
export declare function rejectionCode<C extends string>(action: () => Promise<unknown>, coded: (error: unknown) => error is { readonly code: C }): Promise<C | undefined>;
