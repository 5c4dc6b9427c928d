import { type CliIo, UsageError } from "./io.js";

/** Asks for a secret on the terminal without echo (raw mode): Backspace edits, Ctrl-C aborts. */
export function askHidden(io: CliIo, question: string): Promise<string> {
  const { stdin, stderr } = io;
  return new Promise((resolve, reject) => {
    let answer = "";
    stderr.write(question);
    stdin.setRawMode?.(true);
    stdin.resume();
    const done = (error?: Error): void => {
      stdin.removeListener("data", onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      stderr.write("\n");
      if (error) reject(error);
      else resolve(answer);
    };
    const onData = (chunk: Buffer | string): void => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") {
          done();
          return;
        }
        if (ch === "\u0003") {
          done(new Error("cancelled"));
          return;
        }
        if (ch === "\u007f" || ch === "\b") answer = answer.slice(0, -1);
        else answer += ch;
      }
    };
    stdin.on("data", onData);
  });
}

/** Asks for one echoed line on the terminal; rejects when input ends before Enter. */
export function askLine(io: CliIo, question: string): Promise<string> {
  const { stdin, stderr } = io;
  return new Promise((resolve, reject) => {
    let answer = "";
    stderr.write(question);
    const finish = (error?: Error): void => {
      stdin.removeListener("data", onData);
      stdin.removeListener("end", onEnd);
      stdin.pause();
      if (error) reject(error);
      else resolve(answer.replace(/\r$/, ""));
    };
    const onData = (chunk: Buffer | string): void => {
      const text = chunk.toString("utf8");
      const newline = text.indexOf("\n");
      if (newline < 0) {
        answer += text;
        return;
      }
      answer += text.slice(0, newline);
      finish();
    };
    const onEnd = (): void => finish(new UsageError("input ended before an answer"));
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    stdin.resume();
  });
}
