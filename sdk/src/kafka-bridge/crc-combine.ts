/**
 * CRC-32C of a concatenation from the CRCs of its parts: crc(A ‖ B) from crc(A), crc(B) and
 * the length of B, without reading A or B. CRCs are linear over GF(2): appending |B| bytes
 * multiplies A's register by x^(8·|B|) modulo the polynomial, and the initial/final
 * 0xFFFFFFFF conditioning cancels out, so crc(A ‖ B) = crc(A)·x^(8·|B|) mod P xor crc(B)
 * (the identity zlib's crc32_combine rests on).
 *
 * Why the bridge needs it: Kafka's batch CRC covers attributes..end (40 header bytes and the
 * records), Edgelog's the records only (records.ts). Each side's CRC follows from the other's
 * and a CRC of the 40 header bytes, so a batch crosses the bridge with one pass over its
 * records (produce) or none (fetch), and the CRC a consumer checks is still derived from the
 * one its producer computed: damage to the stored records stays detectable by the client.
 *
 * Arithmetic is in the reflected bit order of crc32c.ts: bit 31 is the coefficient of x^0.
 * Pure module.
 */

const POLY_REFLECTED = 0x82f63b78;

/** a·b mod P for reflected 32-bit polynomials. */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if ((a & m) !== 0) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY_REFLECTED : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) mod P, for every k a safe-integer length in bits can need (8·2^53 < 2^57). */
const X2N: number[] = (() => {
  const t = [0x40000000]; // x^1
  for (let k = 1; k < 57; k++) t.push(multModP(t[k - 1]!, t[k - 1]!));
  return t;
})();

/** x^(8·bytes) mod P. */
function xPow8n(bytes: number): number {
  let p = 0x80000000; // x^0
  let k = 3; // 8 = 2^3
  let n = bytes;
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/**
 * crc32c(A ‖ B) given `crcA` = crc32c(A), `crcB` = crc32c(B) and `lengthB` = |B| in bytes.
 * O(log lengthB) 32-bit multiplications; no bytes are read.
 * @returns an unsigned 32-bit CRC.
 */
export function crc32cCombine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(xPow8n(lengthB), crcA >>> 0) ^ crcB) >>> 0;
}
