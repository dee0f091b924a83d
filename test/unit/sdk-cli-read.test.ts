/**
 * `edgelog read` command lines (pulsar-client read), parsed exactly: the start forms, --inclusive,
 * -n, -e and consume's output options; malformed lines are refused with a UsageError.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_URL, parseCli, UsageError } from "../../sdk/src/cli/index.ts";

const output = { json: false, encoding: "string", printKey: false, keySeparator: "\t", format: undefined, delimiter: undefined, printNull: undefined };

describe("parseCli: read", () => {
  it("parses the defaults and every start form", () => {
    expect(parseCli(["read", "t"])).toEqual({ kind: "read", url: DEFAULT_URL, topic: "t", start: "latest", inclusive: false, count: undefined, exitAtEnd: false, ...output });
    expect(parseCli(["read", "t", "--start", "Earliest", "-n", "5", "-e"])).toMatchObject({ start: "earliest", count: 5, exitAtEnd: true });
    expect(parseCli(["read", "t", "--start", "0002:0000000000000042", "--inclusive"])).toMatchObject({ start: "0002:0000000000000042", inclusive: true });
    expect(parseCli(["read", "t", "--start", "timestamp:1700000000000"])).toMatchObject({ start: { timestamp: 1700000000000 } });
    expect(parseCli(["--url", "http://h:1", "read", "t", "-J", "--encoding", "base64"])).toMatchObject({ url: "http://h:1", json: true, encoding: "base64" });
    expect(parseCli(["read", "t", "-K", ":", "-Z", "-f", "%o %s\\n"])).toMatchObject({ printKey: true, keySeparator: ":", printNull: true, format: "%o %s\\n" });
  });

  it("refuses malformed lines with a UsageError naming the problem", () => {
    for (const [argv, message] of [
      [["read", "t", "--start", "yesterday"], '--start expects earliest, latest, a message id (PPPP:OOOOOOOOOOOOOOOO) or timestamp:MS, got "yesterday"'],
      [["read", "t", "--start", "1700000000000"], '--start expects earliest, latest, a message id (PPPP:OOOOOOOOOOOOOOOO) or timestamp:MS, got "1700000000000"'],
      [["read", "t", "--start", "timestamp:-1"], '--start expects earliest, latest, a message id (PPPP:OOOOOOOOOOOOOOOO) or timestamp:MS, got "timestamp:-1"'],
      [["read", "t", "-n", "0"], "-n must be at least 1"],
      [["read", "t", "-f", "%s", "-J"], "read: use only one of -f and -J"],
      [["read"], "read: missing TOPIC"],
      [["read", "t", "-s", "sub"], "read: unknown option --subscription"],
    ] as const) {
      expect(() => parseCli(argv, {}), argv.join(" ")).toThrow(new UsageError(message));
    }
  });
});
