mod advise;
mod commit;
mod crashtest;
mod probe;
mod report;
mod run;
mod trace;
