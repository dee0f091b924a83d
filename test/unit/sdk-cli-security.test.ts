/**
 * The security commands of the CLI: parsing (pure), credentials from flags and environment,
 * and `token issue` producing a token the gateway's verifier accepts.
 */
import { Writable } from "node:stream";
import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { cliAuth } from "../../sdk/src/cli/args.ts";
import { main, parseCli } from "../../sdk/src/cli/index.ts";

describe("CLI security commands", () => {
  it("parses acls add with Kafka's words", () => {
    expect(parseCli(["acls", "add", "--principal", "User:app", "--resource-type", "topic", "--resource-name", "orders-", "--pattern-type", "prefixed", "--operation", "read"])).toEqual({
      kind: "acls add",
      url: "http://127.0.0.1:8787",
      acl: { principal: "User:app", resourceType: "topic", resourceName: "orders-", patternType: "prefixed", operation: "read" },
    });
    expect(() => parseCli(["acls", "add", "--principal", "app"])).toThrow(/required/);
    expect(() => parseCli(["acls", "remove"])).toThrow(/at least one filter/);
  });

  it("parses quotas alter with values and removals", () => {
    expect(parseCli(["quotas", "alter", "--entity-user", "<default>", "--producer-byte-rate", "1048576", "--remove", "request-rate"])).toEqual({
      kind: "quotas alter",
      url: "http://127.0.0.1:8787",
      user: "<default>",
      clientId: undefined,
      values: { producer_byte_rate: 1048576, request_rate: null },
    });
    expect(() => parseCli(["quotas", "alter", "--entity-user", "a", "--request-rate=0"])).toThrow(/positive/);
  });

  it("takes credentials from --token, EDGELOG_TOKEN, or --user with EDGELOG_PASSWORD", () => {
    expect(cliAuth(["--token", "t1", "topics", "list"], {})).toEqual({ token: "t1" });
    expect(cliAuth(["topics", "list"], { EDGELOG_TOKEN: "t2" })).toEqual({ token: "t2" });
    expect(cliAuth(["--user", "app", "topics", "list"], { EDGELOG_PASSWORD: "pw" })).toEqual({ username: "app", password: "pw" });
    expect(() => cliAuth(["--user", "app"], {})).toThrow(/EDGELOG_PASSWORD/);
    expect(cliAuth(["topics", "list"], {})).toBeNull();
  });

  it("token issue signs an HS256 token with EDGELOG_JWT_SECRET for --sub and --ttl", async () => {
    let out = "";
    const sink = new Writable({
      write(chunk, _enc, cb) {
        out += String(chunk);
        cb();
      },
    });
    const code = await main(["token", "issue", "--sub", "admin", "--ttl", "2h"], { stdin: (async function* () {})(), stdout: sink, stderr: sink, env: { EDGELOG_JWT_SECRET: "s3cret" } });
    expect(code).toBe(0);
    const { payload, protectedHeader } = await jwtVerify(out.trim(), new TextEncoder().encode("s3cret"), { algorithms: ["HS256"] });
    expect(protectedHeader.alg).toBe("HS256");
    expect(payload.sub).toBe("admin");
    expect(payload.exp! - payload.iat!).toBe(7200);
  });
});
