import { PassThrough } from "node:stream";
import { UsageError } from "../../src/cli/io.js";
import { askLine } from "../../src/cli/prompt.js";
import { bufferIo } from "../support/cli-io.js";

/** An io whose stdin the test types into. */
function typingIo() {
  const stdin = new PassThrough();
  return { io: { ...bufferIo(), stdin }, stdin };
}

describe("askLine", () => {
  it("writes the question and resolves with the line up to Enter, without a \\r", async () => {
    const { io, stdin } = typingIo();
    const answer = askLine(io, "Name: ");
    stdin.write("ad");
    stdin.write("a\r\nrest");
    await expect(answer).resolves.toBe("ada");
    expect(io.err()).toBe("Name: ");
    expect(stdin.listenerCount("data")).toBe(0);
  });

  it("rejects with a usage error when input ends before Enter", async () => {
    const { io, stdin } = typingIo();
    const answer = askLine(io, "Name: ");
    stdin.end("partial");
    await expect(answer).rejects.toThrow(new UsageError("input ended before an answer"));
    expect(stdin.listenerCount("end")).toBe(0);
  });
});
