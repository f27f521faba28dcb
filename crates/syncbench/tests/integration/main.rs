mod trace;
