//! Exit codes and the one-line error messages users see.

use std::process::ExitCode;

/// Bad usage or an unusable target: one line naming the problem and what to do; exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A check failed (a crash test lost a commit, a verification did not hold); exit code 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckFailed(pub String);

/// Shorthand for returning a usage error: `return Err(usage(format!(..)))`.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// What a command returns: Ok(exit code) or an error.
pub type Outcome = anyhow::Result<ExitCode>;

/// Whether an error chain is (or is caused by) a broken pipe on output.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// Turn a command's outcome into the process exit code, printing the error (with its causes) to stderr.
pub fn code_for(outcome: Outcome) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) if err.downcast_ref::<UsageError>().is_some() => {
            eprintln!("syncbench: {err}");
            ExitCode::from(2)
        }
        Err(err) if err.downcast_ref::<CheckFailed>().is_some() => {
            eprintln!("syncbench: check failed: {err}");
            ExitCode::from(1)
        }
        Err(err) => {
            eprintln!("syncbench: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
