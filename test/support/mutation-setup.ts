/**
 * Jest's setup under mutation testing (jest.mutate.config.js): a property that fails ends there,
 * without shrinking its counterexample. The mutant is caught either way; shrinking would only take
 * longer than Stryker's timeout and cost a restart of the test runner.
 */
import fc from "fast-check";

fc.configureGlobal({ endOnFailure: true });
