import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { AllowedMethods } from "../../src/gateway/allowed-methods.ts";

describe("AllowedMethods (405 METHOD_NOT_ALLOWED and its Allow header)", () => {
  const allowed = new AllowedMethods(createApp().routes);

  it("lists the methods of the gateway's routes for a path, HEAD with GET", () => {
    expect(allowed.forPath("/v1/topics")).toEqual(["GET", "HEAD", "POST"]);
    expect(allowed.forPath("/v1/topics/orders")).toEqual(["DELETE", "GET", "HEAD", "PATCH"]);
    expect(allowed.forPath("/v1/topics/acme/eu/orders")).toEqual(["DELETE", "GET", "HEAD", "PATCH"]);
    expect(allowed.forPath("/v1/topics/orders/partitions/3/records")).toEqual(["GET", "HEAD", "POST"]);
    expect(allowed.forPath("/v1/topics/acme/eu/orders/partitions/3/offsets")).toEqual(["GET", "HEAD"]);
    expect(allowed.forPath("/v1/groups/g1/heartbeat")).toEqual(["POST"]);
  });

  it("knows nothing of unknown paths, and middleware routes (ALL) do not count", () => {
    expect(allowed.forPath("/v1/nope")).toEqual([]);
    expect(allowed.forPath("/v1")).toEqual([]);
    expect(allowed.forPath("/v1/topics/orders/partitions/3")).toEqual(["DELETE", "GET", "HEAD", "PATCH"]); // a qualified topic name
  });

  it("a parameter is one segment, a trailing * any rest, other characters literal", () => {
    const m = new AllowedMethods([
      { method: "GET", path: "/a/:x/b" },
      { method: "PUT", path: "/s/*" },
      { method: "POST", path: "/dot.path" },
      { method: "ALL", path: "/a/*" },
    ]);
    expect(m.forPath("/a/1/b")).toEqual(["GET", "HEAD"]);
    expect(m.forPath("/a/1/2/b")).toEqual([]);
    expect(m.forPath("/s/x/y")).toEqual(["PUT"]);
    expect(m.forPath("/dotxpath")).toEqual([]);
    expect(m.forPath("/dot.path")).toEqual(["POST"]);
  });
});
