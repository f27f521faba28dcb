mod advise;
mod probe;
mod run;
