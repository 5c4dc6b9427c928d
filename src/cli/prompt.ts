import { type CliIo, UsageError } from "./io.js";

/** Asks for a secret on the terminal without echo (raw mode): Backspace edits, Ctrl-C aborts. */
export const askHidden = (io: CliIo, question: string) => ask(io, question, true);

/** Asks for one echoed line on the terminal; rejects when input ends before Enter. */
export const askLine = (io: CliIo, question: string) => ask(io, question, false);

function ask(io: CliIo, question: string, hidden: boolean): Promise<string> {
  const { stdin, stderr } = io;
  return new Promise((resolve, reject) => {
    let answer = "";
    stderr.write(question);
    if (hidden) stdin.setRawMode?.(true);
    const done = (error?: Error): void => {
      stdin.removeListener("data", onData);
      stdin.removeListener("end", onEnd);
      if (hidden) stdin.setRawMode?.(false);
      stdin.pause();
      if (hidden) stderr.write("\n");
      if (error) reject(error);
      else resolve(answer.replace(/\r$/, ""));
    };
    const onData = (chunk: Buffer | string): void => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\n" || (hidden && (ch === "\r" || ch === "\u0004"))) {
          done();
          return;
        }
        if (hidden && ch === "\u0003") {
          done(new Error("cancelled"));
          return;
        }
        if (hidden && (ch === "\u007f" || ch === "\b")) answer = answer.slice(0, -1);
        else answer += ch;
      }
    };
    const onEnd = (): void => done(new UsageError("input ended before an answer"));
    stdin.on("data", onData);
    if (!hidden) stdin.on("end", onEnd);
    stdin.resume();
  });
}
