//! Where a power-cut table goes besides the screen: the JSON and Markdown flags `powercut lab`, `db` and
//! `run` share, and the one way they are written.

use std::path::{Path, PathBuf};

/// Where a power-cut table goes besides the screen (`powercut lab`, `db` and `run`).
#[derive(Clone, Debug, clap::Args)]
pub struct TableExports {
    /// Write every cell and cut as JSON to FILE (`-` for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the table as Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

impl TableExports {
    /// Print `table` (unless the JSON goes to stdout), then write the JSON and the Markdown asked for.
    pub(super) fn write(
        &self,
        table: &str,
        json: impl FnOnce() -> anyhow::Result<String>,
        markdown: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        if self.json.as_deref() != Some(Path::new("-")) {
            print!("{table}");
        }
        if let Some(dest) = &self.json {
            crate::core::output::write_to(dest, &json()?)?;
        }
        if let Some(dest) = &self.markdown {
            crate::core::output::write_to(dest, &markdown())?;
        }
        Ok(())
    }
}
