import { describe, expect, it } from "vitest";
import { Access } from "./access.js";
import { PERMISSIONS, parsePermissions } from "./permissions.js";
import { TokenRegistry, parseToken, parseTokenList } from "./tokens.js";

const request = (secret?: string) => new Request("http://x/", secret ? { headers: { authorization: `Bearer ${secret}` } } : {});

describe("tokens", () => {
  it("parse name:secret (all permissions) and name:secret:permissions", () => {
    expect(parseToken("admin:s3cret-s3cret")).toEqual({ name: "admin", secret: "s3cret-s3cret", permissions: PERMISSIONS });
    expect(parseToken("ops:s3cret-s3cret:view,cancel")).toEqual({ name: "ops", secret: "s3cret-s3cret", permissions: ["view", "cancel"] });
    expect(parseTokenList("a:12345678 b:87654321:view; c:abcdefgh:*").map((t) => t.name)).toEqual(["a", "b", "c"]);
  });

  it.each(["nocolon", ":secret123", "bad name:secret123", "ops:short", "ops:secret123:fly"])("refuse %s naming the field", (text) => {
    expect(() => parseToken(text, "--token")).toThrow(expect.objectContaining({ code: "BELAY_INVALID_INPUT", field: "--token" }));
  });

  it("permissions parse by name", () => {
    expect(parsePermissions("*", "p")).toBe(PERMISSIONS);
    expect(() => parsePermissions(",", "p")).toThrow(/names no permission/);
  });

  it("a registry finds tokens by secret and refuses repeated names", () => {
    const registry = new TokenRegistry([parseToken("a:12345678"), parseToken("b:87654321")]);
    expect(registry.find("87654321")?.name).toBe("b");
    expect(registry.find("nope")).toBeNull();
    expect(() => new TokenRegistry([parseToken("a:12345678"), parseToken("a:87654321")])).toThrow(/repeats token name a/);
  });
});

describe("Access with tokens", () => {
  const access = new Access({ tokens: [parseToken("admin:12345678"), parseToken("viewer:87654321:view,viewSensitive")] });

  it("view needs no token; other permissions need one (401) that grants them (403)", async () => {
    expect(await access.check(request(), "view")).toEqual({ allowed: true, actor: "anonymous" });
    expect(await access.check(request(), "cancel")).toEqual({ allowed: false, actor: "anonymous", status: 401 });
    expect(await access.check(request("wrong"), "cancel")).toEqual({ allowed: false, actor: "anonymous", status: 401 });
    expect(await access.check(request("87654321"), "cancel")).toEqual({ allowed: false, actor: "viewer", status: 403 });
    expect(await access.check(request("12345678"), "cancel")).toEqual({ allowed: true, actor: "admin" });
  });

  it("a browser session's token stands in for a missing header", async () => {
    expect(await access.check(request(), "cancel", "12345678")).toEqual({ allowed: true, actor: "admin" });
    expect(await access.signIn(request(), "87654321")).toBe("viewer");
    expect(await access.signIn(request(), "nope")).toBeNull();
  });
});

describe("Access with a host callback", () => {
  it("passes the session token as a bearer header and honours an explicit reason", async () => {
    const access = new Access({
      authorize: (req, permission) => {
        const who = req.headers.get("authorization");
        if (who === "Bearer alice-token") return { allowed: true, actor: "alice" };
        return { allowed: permission === "view", actor: "anon", ...(permission === "requeue" ? { reason: "forbidden" as const } : {}) };
      },
    });
    expect(await access.check(request(), "cancel", "alice-token")).toEqual({ allowed: true, actor: "alice" });
    expect(await access.check(request(), "cancel")).toMatchObject({ allowed: false, status: 401 });
    expect(await access.check(request(), "requeue")).toMatchObject({ allowed: false, status: 403 });
    expect(await access.signIn(request(), "alice-token")).toBe("alice");
  });
});
