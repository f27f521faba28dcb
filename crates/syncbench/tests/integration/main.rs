//! Integration tests driving the real `syncbench` binary, one module per area.

mod pages;
