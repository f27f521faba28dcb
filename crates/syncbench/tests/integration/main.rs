mod probe;
mod run;
