/**
 * Errors that end a command with a known exit code (docs/design.md §2): 2 for a usage error or
 * unusable input (nothing written), 1 for a runtime failure.
 */
export class CondenseError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 | 3 | 130,
  ) {
    super(message);
    this.name = "CondenseError";
  }
}

/** Bad arguments, bad configuration, or input that cannot be used: exit 2, nothing written. */
export class UsageError extends CondenseError {
  constructor(message: string) {
    super(message, 2);
    this.name = "UsageError";
  }
}

/** A failure while doing the work: exit 1. */
export class RuntimeFailure extends CondenseError {
  constructor(message: string) {
    super(message, 1);
    this.name = "RuntimeFailure";
  }
}
