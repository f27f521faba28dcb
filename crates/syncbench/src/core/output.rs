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

/// A progress bar of `len` steps on stderr, drawn only when stderr is a terminal (`template` as indicatif's).
pub fn progress_bar(len: u64, template: &str) -> indicatif::ProgressBar {
    if !stderr_is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template).unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// Map `step` over `items` in order, with a progress bar on stderr when it is a terminal (`label` names
/// the item being worked on).
pub fn with_progress<T, R>(items: &[T], label: impl Fn(&T) -> String, mut step: impl FnMut(&T) -> R) -> Vec<R> {
    let bar = stderr_is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(items.len() as u64);
        let style = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    });
    let results = items
        .iter()
        .map(|item| {
            if let Some(bar) = &bar {
                bar.set_message(label(item));
            }
            let result = step(item);
            if let Some(bar) = &bar {
                bar.inc(1);
            }
            result
        })
        .collect();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    results
}
