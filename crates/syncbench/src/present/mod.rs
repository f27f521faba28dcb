//! Turning payloads into reading: `run`'s text, tables, summaries, reports with charts, and comparisons.
//! Uses every layer below it (`advise`, `proof`, `measure`, `observe`, `core`).
//! See ARCHITECTURE.md for the layers and the test that keeps dependencies pointing down.

pub mod compare;
pub mod report;
pub mod run_text;
pub mod summary;
pub mod table;
pub mod tails;
