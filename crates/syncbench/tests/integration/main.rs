mod advise;
mod commit;
mod crashtest;
mod probe;
mod run;
