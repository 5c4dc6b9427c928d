import { describe, expect, it } from "@jest/globals";
import { RequestBodies } from "../../src/influx/request-bodies.js";

const bytes = (text: string): Buffer => Buffer.from(text, "utf8");
const text = (body: ArrayBuffer | Uint8Array): string =>
  Buffer.from(body instanceof ArrayBuffer ? new Uint8Array(body) : body).toString("utf8");

describe("RequestBodies", () => {
  it("gives a batch's bytes as an ArrayBuffer of exactly their length", () => {
    const body = new RequestBodies().body(bytes("m v=1 1\nm v=2 2"));
    expect(body).toBeInstanceOf(ArrayBuffer);
    expect(text(body)).toBe("m v=1 1\nm v=2 2");
  });

  it("is what influxdb-client's transport sends without a copy (Buffer.from(body, 'utf-8'))", () => {
    const body = new RequestBodies().body(bytes("m v=1 1"));
    // the transport's createRequestMessage: a Buffer given there is copied, an ArrayBuffer viewed
    const sent: unknown = Reflect.apply(Buffer.from, Buffer, [body, "utf-8"]);
    if (!(sent instanceof Buffer)) throw new Error("Buffer.from gave no Buffer");
    expect(sent.buffer).toBe(body);
    expect(sent.toString("utf8")).toBe("m v=1 1");
  });

  it("uses a body again once its request was answered, resized to the next batch", () => {
    const bodies = new RequestBodies();
    const first = bodies.body(bytes("a long first batch of lines"));
    bodies.reuse(first);
    const second = bodies.body(bytes("short"));
    expect(second).toBe(first);
    expect(text(second)).toBe("short");
  });

  it("never hands out again a body not given back (a failed request's: its socket may still send it)", () => {
    const bodies = new RequestBodies();
    const failed = bodies.body(bytes("m v=1 1"));
    const next = bodies.body(bytes("m v=2 2"));
    expect(next).not.toBe(failed);
    expect(text(failed)).toBe("m v=1 1");
  });

  it("gives bytes larger than its buffers as they are", () => {
    const large = bytes("x".repeat(65));
    const bodies = new RequestBodies(64);
    expect(bodies.body(large)).toBe(large);
    bodies.reuse(large);
    expect(bodies.body(bytes("small"))).toBeInstanceOf(ArrayBuffer);
  });
});
