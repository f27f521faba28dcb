mod advise;
