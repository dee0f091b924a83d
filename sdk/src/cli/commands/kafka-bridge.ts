/**
 * `kafka-bridge`: runs the Kafka wire-protocol bridge (sdk/src/kafka-bridge, docs/KAFKA-BRIDGE.md)
 * in the foreground until SIGINT / SIGTERM, so unmodified Kafka clients reach the gateway at --url.
 */
import process from "node:process";
import { flag, intOption, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";

export interface KafkaBridgeCommand {
  kind: "kafka-bridge";
  url: string;
  host: string;
  port: number;
  advertisedHost: string | undefined;
  advertisedPort: number | undefined;
  namespace: string | undefined;
  maxFrameBytes: number | undefined;
  autoCreateTopics: boolean;
  defaultPartitions: number | undefined;
  produceLingerMs: number | undefined;
  partialFrameTimeoutMs: number | undefined;
  readAheadBytes: number | undefined;
  maxDecompressedBytes: number | undefined;
}

/** `HOST:PORT` (IPv6 hosts in brackets). @throws UsageError */
export function hostPort(option: string, raw: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(raw);
  const port = m === null ? Number.NaN : Number(m[3]);
  if (m === null || !(port >= 0 && port <= 65535)) throw new UsageError(`${option} must be HOST:PORT, got ${JSON.stringify(raw)}`);
  return { host: (m[1] ?? m[2])!, port };
}

export const kafkaBridge = defineCommand<KafkaBridgeCommand>({
  name: "kafka-bridge",
  usage:
    "  kafka-bridge [--listen HOST:PORT] [--advertise HOST:PORT] [--namespace TENANT/NS]\n" +
    "               [--auto-create-topics] [--default-partitions N] [--max-frame-bytes N]\n" +
    "               [--linger-ms N] [--partial-frame-timeout-ms N] [--read-ahead-bytes N]\n" +
    "               [--max-decompressed-bytes N]\n" +
    "      Serves Kafka's wire protocol (kcat, librdkafka, kafkajs, Java clients) on --listen\n" +
    "      (default 127.0.0.1:9092), translating to the gateway at --url; runs until Ctrl-C.\n" +
    "      Kafka topic names are the topics of --namespace (default public/default).\n" +
    "      --read-ahead-bytes: memory for fetch read-ahead over all connections (default 64 MiB; 0: off).\n" +
    "      --max-decompressed-bytes: memory for decompressed produced batches over all connections\n" +
    "      (default 64 MiB, at least 8 MiB; a compressed batch that does not fit waits).\n",
  options: {
    listen: { type: "string" },
    advertise: { type: "string" },
    namespace: { type: "string" },
    "auto-create-topics": { type: "boolean" },
    "default-partitions": { type: "string" },
    "max-frame-bytes": { type: "string" },
    "linger-ms": { type: "string" },
    "partial-frame-timeout-ms": { type: "string" },
    "read-ahead-bytes": { type: "string" },
    "max-decompressed-bytes": { type: "string" },
  },
  args: [],
  parse({ url, values }) {
    const listen = hostPort("--listen", str(values, "listen") ?? "127.0.0.1:9092");
    const advertise = str(values, "advertise");
    const advertised = advertise === undefined ? undefined : hostPort("--advertise", advertise);
    const defaultPartitions = intOption("--default-partitions", str(values, "default-partitions"));
    if (defaultPartitions === 0) throw new UsageError("--default-partitions must be at least 1");
    return {
      kind: "kafka-bridge",
      url,
      host: listen.host,
      port: listen.port,
      advertisedHost: advertised?.host,
      advertisedPort: advertised?.port,
      namespace: str(values, "namespace"),
      maxFrameBytes: intOption("--max-frame-bytes", str(values, "max-frame-bytes")),
      autoCreateTopics: flag(values, "auto-create-topics"),
      defaultPartitions,
      produceLingerMs: intOption("--linger-ms", str(values, "linger-ms")),
      partialFrameTimeoutMs: intOption("--partial-frame-timeout-ms", str(values, "partial-frame-timeout-ms")),
      readAheadBytes: intOption("--read-ahead-bytes", str(values, "read-ahead-bytes")),
      maxDecompressedBytes: intOption("--max-decompressed-bytes", str(values, "max-decompressed-bytes")),
    };
  },
  async run(cmd, { client, io }) {
    // Loaded here: the bridge pulls in node:net and the codecs, which other commands do not need.
    const { startKafkaBridge } = await import("../../kafka-bridge/index.ts");
    let bridge;
    try {
      bridge = await startKafkaBridge({
        client,
        host: cmd.host,
        port: cmd.port,
        advertisedHost: cmd.advertisedHost,
        advertisedPort: cmd.advertisedPort,
        namespace: cmd.namespace,
        maxFrameBytes: cmd.maxFrameBytes,
        autoCreateTopics: cmd.autoCreateTopics,
        defaultPartitions: cmd.defaultPartitions,
        produceLingerMs: cmd.produceLingerMs,
        partialFrameTimeoutMs: cmd.partialFrameTimeoutMs,
        readAheadBytes: cmd.readAheadBytes,
        maxDecompressedBytes: cmd.maxDecompressedBytes,
        log: (m) => io.stderr.write(`edgelog kafka-bridge: ${m}\n`),
      });
    } catch (e) {
      if (e instanceof TypeError) throw new UsageError(e.message);
      throw e;
    }
    io.stderr.write(`edgelog kafka-bridge: listening on ${cmd.host}:${bridge.port}, Edgelog at ${cmd.url}\n`);
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await bridge.close();
  },
});
