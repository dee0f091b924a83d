/** Seeds of file 1 of 4 of the default simulation run (see ./seeds.ts). */
import { describe } from "vitest";
import { seedRange } from "./seeds.ts";

describe("raft simulation, part 1 of 4", () => seedRange(1));
