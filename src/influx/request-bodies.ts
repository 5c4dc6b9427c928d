/**
 * Largest body sent from a reused buffer, in bytes (the address space each buffer reserves; its
 * memory is committed only as far as the body it holds). A larger body goes as it is.
 */
const MAX_REUSED_BYTES = 64 * 2 ** 20;

/**
 * The bodies of write requests, handed to influxdb-client's transport without its copy. The
 * transport sends `Buffer.from(body, "utf-8")`: of a Buffer that is a copy, new memory the size of
 * the batch for every request (~120 bytes a point), which V8 counts against the old generation
 * until its next mark-compact, so that a backfill's writes alone started a full collection every
 * few batches. Of an ArrayBuffer it is a view of the whole buffer. So a body is copied into an
 * ArrayBuffer resized in place to its exact length, and that buffer is used again once its request
 * was answered.
 */
export class RequestBodies {
  private readonly free: ArrayBuffer[] = [];

  /** @param maxBytes the largest body sent from a reused buffer */
  constructor(private readonly maxBytes = MAX_REUSED_BYTES) {}

  /** `bytes` as a body for the transport: an ArrayBuffer of exactly their length when they fit. */
  body(bytes: Uint8Array): ArrayBuffer | Uint8Array {
    if (bytes.length > this.maxBytes) return bytes;
    const body = this.free.pop() ?? new ArrayBuffer(0, { maxByteLength: this.maxBytes });
    body.resize(bytes.length);
    new Uint8Array(body).set(bytes);
    return body;
  }

  /**
   * Takes back the body of a request answered with success (the server read all of it). A failed
   * request's body is not taken back: its socket may still be sending it.
   */
  reuse(body: ArrayBuffer | Uint8Array): void {
    if (body instanceof ArrayBuffer) this.free.push(body);
  }
}
