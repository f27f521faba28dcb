mod advise;
mod commit;
mod fsync_errors;
mod probe;
mod report;
mod run;
mod trace;
