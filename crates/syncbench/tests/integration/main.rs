mod commit;
