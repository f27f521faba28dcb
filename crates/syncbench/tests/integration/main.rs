mod advise;
mod commit;
mod probe;
mod report;
mod run;
mod trace;
