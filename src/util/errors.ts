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

/** What a failed file-system call met, in words, by errno code. */
const ERRNO_WORDS: Record<string, string> = {
  ENOENT: "no such file",
  EISDIR: "is a directory",
  ENOTREG: "not a regular file",
  EACCES: "permission denied (EACCES)",
  EPERM: "operation not permitted (EPERM)",
  ELOOP: "a loop of symbolic links (ELOOP)",
  ENAMETOOLONG: "the name is too long (ENAMETOOLONG)",
};

/** Why a file-system call failed, in words (`permission denied (EACCES)`), else the error's own message. */
export function errnoWords(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return ERRNO_WORDS[e?.code ?? ""] ?? String(e?.message ?? error);
}

/** A failure while doing the work: exit 1. */
export class RuntimeFailure extends CondenseError {
  constructor(message: string) {
    super(message, 1);
    this.name = "RuntimeFailure";
  }
}
