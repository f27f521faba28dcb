mod advise;
mod run;
