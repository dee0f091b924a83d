// Types of the two pure-JS codec packages the bridge uses (they ship none).
declare module "snappyjs" {
  /** Raw snappy block -> bytes. @throws Error past `maxLength` or on a corrupt stream. */
  export function uncompress(compressed: Uint8Array, maxLength?: number): Uint8Array;
  export function compress(uncompressed: Uint8Array): Uint8Array;
}
declare module "lz4js" {
  /** Upper bound of the decompressed size of an LZ4 frame, from its header. */
  export function decompressBound(src: Uint8Array): number;
  /** Decodes the LZ4 block src[sIndex, sIndex + sLength) into dst from dIndex on; returns the index after the last byte written. No bound is checked. */
  export function decompressBlock(src: Uint8Array, dst: Uint8Array, sIndex: number, sLength: number, dIndex: number): number;
  /** Decodes an LZ4 frame into `dst`; returns the decoded length (which exceeds dst.length when it did not fit). */
  export function decompressFrame(src: Uint8Array, dst: Uint8Array): number;
  /** An LZ4 frame -> bytes (a buffer of `maxSize`, sliced to the written length). */
  export function decompress(src: Uint8Array, maxSize?: number): Uint8Array;
  export function compress(src: Uint8Array, maxSize?: number): Uint8Array;
}
