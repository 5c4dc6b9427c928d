import type { Logger } from "pino";
import { StateError } from "../state/state-error.js";
import type { StateStore } from "../state/state-store.js";
import { messageOf } from "../util/errors.js";

/** A busy or locked database (another process's long transaction): tried again, not fatal. */
export function isTransient(error: StateError): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(error.code ?? "");
}

/** Where the service's units report failures: logged, or {@link fatal} (resolves `failure`). */
export class ServiceFailures {
  /** Resolves with the error that stopped the service by itself (its state file went away). */
  readonly failure: Promise<Error>;
  private failWith: (error: Error) => void = () => undefined;

  /** `stopped`: true once the service stops; a fatal error is then no longer reported. */
  constructor(
    private readonly log: Logger,
    private readonly stopped: () => boolean,
  ) {
    this.failure = new Promise((resolve) => {
      this.failWith = resolve;
    });
  }

  /** A failure the service cannot go on with: logged once, then the run command stops it. */
  fatal(error: Error): void {
    if (this.stopped()) return;
    this.log.fatal({ error: messageOf(error) }, "the service cannot go on");
    this.failWith(error);
  }

  /** A run that failed (`what`): logged; fatal when the state database itself failed. */
  failed(error: unknown, what: string): void {
    this.log.error({ error: messageOf(error) }, what);
    if (error instanceof StateError && !isTransient(error)) this.fatal(error);
  }

  /** Work that never rejects: a failure goes to {@link failed} as `what`; then `after` runs. */
  settled(work: Promise<unknown>, what: string, after: () => void): Promise<void> {
    return work
      .then(
        () => undefined,
        (error: unknown) => this.failed(error, what),
      )
      .finally(after);
  }

  /** True while the state file is the one in use; else {@link fatal}. */
  stateFileInUse(store: Pick<StateStore, "checkFile">): boolean {
    try {
      store.checkFile();
      return true;
    } catch (error) {
      this.fatal(error instanceof Error ? error : new Error(messageOf(error)));
      return false;
    }
  }
}
