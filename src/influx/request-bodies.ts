/**
 * Largest body sent from a reused buffer, in bytes (the address space each buffer reserves; its
 * memory is committed only as far as the body it holds). A larger body goes as it is.
 */
const MAX_REUSED_BYTES = 64 * 2 ** 20;

/**
 * The bodies of write requests, handed to influxdb-client's transport without its copy: it sends
 * `Buffer.from(body, "utf-8")`, of a Buffer a copy (new old-generation memory per request: a
 * backfill started a full collection every few batches), of an ArrayBuffer a view. So a body is
 * copied into an ArrayBuffer resized to its length, used again once its request was answered.
 */
export class RequestBodies {
  private readonly free: ArrayBuffer[] = [];

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
