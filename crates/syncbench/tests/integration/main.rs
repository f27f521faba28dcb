//! Integration tests driving the real `syncbench` binary, one module per area.

mod advise;
mod commit;
mod pages;
mod probe;
mod report;
mod run;
