/**
 * Field case E6 (ACL evaluation: deny precedence, prefix, wildcard, implied operations) on the
 * pure authorizer, plus the resource hierarchy and input normalisation.
 */
import { describe, expect, it } from "vitest";
import { authorize, parseAclBinding, type AclBinding, type AclOperation } from "../../src/protocol/acl.ts";

const topic = (name: string) => ({ type: "topic" as const, name: name.includes("/") ? name : `public/default/${name}` });

function binding(principal: string, operation: AclOperation, patternType: "literal" | "prefixed", resourceName: string, permission: "allow" | "deny" = "allow"): AclBinding {
  return parseAclBinding({ principal: `User:${principal}`, resourceType: "topic", resourceName, patternType, operation, permission });
}

describe("E6: ACL evaluation", () => {
  const acls: AclBinding[] = [
    binding("alice", "read", "prefixed", "orders-"),
    binding("alice", "read", "literal", "orders-secret", "deny"),
    binding("alice", "write", "literal", "audit"),
    binding("bob", "read", "prefixed", "*"),
    binding("carol", "read", "literal", "*"),
    binding("*", "read", "literal", "public"),
  ];
  const table: [string, AclOperation, string, boolean][] = [
    ["alice", "read", "orders-eu", true],
    ["alice", "read", "orders-secret", false],
    ["alice", "read", "orders", false],
    ["alice", "describe", "orders-secret", true],
    ["alice", "describe", "audit", true],
    ["alice", "describe-configs", "audit", false],
    ["alice", "write", "orders-eu", false],
    ["bob", "read", "orders-eu", false],
    ["carol", "read", "anything", true],
    ["dave", "read", "public", true],
    ["dave", "read", "orders-eu", false],
  ];
  it.each(table)("%s %s %s -> allowed=%s", (principal, op, name, allowed) => {
    expect(authorize(acls, principal, topic(name), op).allowed).toBe(allowed);
  });

  it("a PREFIXED * matches only names that start with *", () => {
    expect(authorize(acls, "bob", topic("*x"), "read").allowed).toBe(true);
  });

  it("then DENY User:* READ topic LITERAL * denies carol and alice", () => {
    const more = [...acls, binding("*", "read", "literal", "*", "deny")];
    expect(authorize(more, "carol", topic("anything"), "read").allowed).toBe(false);
    expect(authorize(more, "alice", topic("orders-eu"), "read").allowed).toBe(false);
    // DESCRIBE is not denied by a READ deny.
    expect(authorize(more, "alice", topic("orders-eu"), "describe").allowed).toBe(true);
  });

  it("ALTER_CONFIGS implies DESCRIBE_CONFIGS; READ does not; ALL covers everything; superusers bypass", () => {
    const b = [binding("x", "alter-configs", "literal", "t"), binding("y", "all", "literal", "t")];
    expect(authorize(b, "x", topic("t"), "describe-configs").allowed).toBe(true);
    expect(authorize(b, "x", topic("t"), "describe").allowed).toBe(false);
    for (const op of ["read", "write", "create", "delete", "alter", "describe", "describe-configs", "alter-configs"] as const) {
      expect(authorize(b, "y", topic("t"), op).allowed).toBe(true);
    }
    expect(authorize([], "root", topic("t"), "delete", new Set(["root"])).allowed).toBe(true);
    expect(authorize([], "nobody", topic("t"), "describe").allowed).toBe(false);
  });
});

describe("resource hierarchy (Pulsar's tenant and namespace grants)", () => {
  const acls = [
    parseAclBinding({ principal: "ops", resourceType: "tenant", resourceName: "acme", operation: "all" }),
    parseAclBinding({ principal: "app", resourceType: "namespace", resourceName: "acme/prod", operation: "write" }),
    parseAclBinding({ principal: "app", resourceType: "topic", resourceName: "acme/prod/payments", operation: "write", permission: "deny" }),
  ];
  it("a tenant grant covers its namespaces and topics, and no other tenant", () => {
    expect(authorize(acls, "ops", { type: "topic", name: "acme/prod/x" }, "delete").allowed).toBe(true);
    expect(authorize(acls, "ops", { type: "namespace", name: "acme/dev" }, "alter").allowed).toBe(true);
    expect(authorize(acls, "ops", { type: "topic", name: "acmex/prod/x" }, "read").allowed).toBe(false);
    expect(authorize(acls, "ops", { type: "topic", name: "other/acme/x" }, "read").allowed).toBe(false);
  });
  it("a namespace grant covers its topics; a topic deny still wins", () => {
    expect(authorize(acls, "app", { type: "topic", name: "acme/prod/orders" }, "write").allowed).toBe(true);
    expect(authorize(acls, "app", { type: "topic", name: "acme/prod/payments" }, "write").allowed).toBe(false);
    expect(authorize(acls, "app", { type: "topic", name: "acme/prodx/orders" }, "write").allowed).toBe(false);
  });
});

describe("parseAclBinding", () => {
  it("normalises names, Kafka spellings and defaults", () => {
    expect(parseAclBinding({ principal: "User:alice", resourceType: "TOPIC", resourceName: "orders", operation: "DESCRIBE_CONFIGS" })).toEqual({
      principal: "alice",
      resourceType: "topic",
      resourceName: "public/default/orders",
      patternType: "literal",
      operation: "describe-configs",
      permission: "allow",
    });
  });
  it("rejects unknown operations and bad principals with INVALID_REQUEST", () => {
    expect(() => parseAclBinding({ principal: "a", resourceType: "topic", resourceName: "t", operation: "fly" })).toThrow(expect.objectContaining({ code: "INVALID_REQUEST" }));
    expect(() => parseAclBinding({ principal: "a b", resourceType: "topic", resourceName: "t", operation: "read" })).toThrow(expect.objectContaining({ code: "INVALID_REQUEST" }));
  });
});
