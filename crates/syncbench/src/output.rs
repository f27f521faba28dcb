//! Where exports go: a path, or `-` for stdout.

use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// Write `contents` to `dest` (`-` = stdout). Files are created or truncated: an export path is a file
/// the user named for syncbench's output, never a file in the measured directory.
pub fn write_to(dest: &Path, contents: &str) -> anyhow::Result<()> {
    if dest == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(contents.as_bytes())?;
        out.flush()?;
        return Ok(());
    }
    std::fs::write(dest, contents).with_context(|| format!("cannot write {}", dest.display()))
}

/// Whether stderr is a terminal (progress bars are drawn only then).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Whether colour may be used on stdout (a terminal, and NO_COLOR unset).
pub fn use_color() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}
