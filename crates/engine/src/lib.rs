//! The syncbench reference engine: a write-ahead log with group commit and a page store with torn-page
//! protection, generic over a [`Storage`] so the same code runs on real files and on the crash simulator.

#![forbid(unsafe_code)]

pub mod pages;
pub mod storage;
pub mod wal;
pub mod workload;

pub use storage::{FileOptions, RealFile, RealStorage, Storage, StorageFile, WriteSync};
