mod fsync_errors;
