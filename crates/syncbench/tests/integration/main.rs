mod advise;
mod commit;
mod probe;
mod run;
