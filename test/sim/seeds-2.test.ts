/** Seeds of file 2 of 4 of the default simulation run (see ./seeds.ts). */
import { describe } from "vitest";
import { seedRange } from "./seeds.ts";

describe("raft simulation, part 2 of 4", () => seedRange(2));
