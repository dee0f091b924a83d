/** `edgelog kafka-bridge`: command-line parsing (the running bridge is covered by the e2e tests). */
import { describe, expect, it } from "vitest";
import { UsageError, parseCli } from "../../sdk/src/cli/index.ts";

describe("edgelog kafka-bridge", () => {
  it("parses --listen, --advertise, --namespace and the topic options, with defaults", () => {
    expect(parseCli(["kafka-bridge", "--url", "http://gw:8787"])).toEqual({
      kind: "kafka-bridge",
      url: "http://gw:8787",
      host: "127.0.0.1",
      port: 9092,
      advertisedHost: undefined,
      advertisedPort: undefined,
      namespace: undefined,
      maxFrameBytes: undefined,
      autoCreateTopics: false,
      defaultPartitions: undefined,
      produceLingerMs: undefined,
      partialFrameTimeoutMs: undefined,
    });
    expect(
      parseCli([
        "kafka-bridge",
        "--listen",
        "[::1]:19092",
        "--advertise",
        "kafka.local:9092",
        "--namespace",
        "acme/prod",
        "--auto-create-topics",
        "--default-partitions",
        "6",
        "--max-frame-bytes",
        "1048576",
        "--linger-ms",
        "5",
        "--partial-frame-timeout-ms",
        "0",
        "--max-decompressed-bytes",
        "16777216",
      ]),
    ).toMatchObject({
      host: "::1",
      port: 19092,
      advertisedHost: "kafka.local",
      advertisedPort: 9092,
      namespace: "acme/prod",
      autoCreateTopics: true,
      defaultPartitions: 6,
      maxFrameBytes: 1048576,
      produceLingerMs: 5,
      partialFrameTimeoutMs: 0,
      maxDecompressedBytes: 16777216,
    });
  });

  it("refuses a malformed address or count with a usage error", () => {
    expect(() => parseCli(["kafka-bridge", "--listen", "9092"])).toThrow(UsageError);
    expect(() => parseCli(["kafka-bridge", "--listen", "host:99999"])).toThrow(UsageError);
    expect(() => parseCli(["kafka-bridge", "--default-partitions", "0"])).toThrow(UsageError);
    expect(() => parseCli(["kafka-bridge", "--max-frame-bytes", "-1"])).toThrow(UsageError);
    expect(() => parseCli(["kafka-bridge", "--linger-ms", "-1"])).toThrow(UsageError);
  });
});
