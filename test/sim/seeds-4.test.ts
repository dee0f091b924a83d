/** Seeds of file 4 of 4 of the default simulation run (see ./seeds.ts). */
import { describe } from "vitest";
import { seedRange } from "./seeds.ts";

describe("raft simulation, part 4 of 4", () => seedRange(4));
