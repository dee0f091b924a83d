/**
 * The ordering rule of config pushes (docs/RAFT.md "Config pushes carry their record index").
 *
 * With the metadata quorum, every config push carries the metadata offset (the Raft index of
 * the metadata record) of the topic state it reflects; a partition stores the offset of the
 * configs it holds with them (meta row `configs_offset`, in the same transaction) and ignores
 * a push older than what it holds, as a KRaft broker applies only metadata records past the
 * offset it has. Equal offsets are the same state pushed again: applied (idempotent). A push
 * without an offset (MetadataDO, which has no record index) is always applied, as before, and
 * leaves the held offset as it is.
 */

/**
 * Whether a push carrying `pushed` is older than the configs held at `held`.
 * @param held the metadata offset of the configs the partition holds; null when none is known
 *   (configs from init, MetadataDO, or a partition from before this rule).
 * @param pushed the push's metadata offset; undefined when the push carries none.
 */
export function isStaleConfigsPush(held: number | null, pushed: number | undefined): boolean {
  return pushed !== undefined && held !== null && pushed < held;
}
