// CRC-32C (Castagnoli), as TFRecord files — TensorBoard's event files — checksum each record's
// length and data, and the "masked" form they store: a CRC of data that holds CRCs is weak, so
// the stored value is rotated and offset (TensorFlow's crc32c::Mask).

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const MASK_DELTA = 0xa282ead8;

/** The masked CRC-32C a record stores: rotate right by 15 bits, then add a constant. */
export function maskedCrc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const c = crc32c(bytes, start, end);
  return ((((c >>> 15) | (c << 17)) >>> 0) + MASK_DELTA) >>> 0;
}
