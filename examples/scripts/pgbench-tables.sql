-- pgbench's four tables at scale 10 (1 branch, 10 tellers and 100,000
-- accounts per scale unit, as pgbench -i makes them), for
--   tunebench load script --init-file examples/scripts/pgbench-tables.sql
-- and for an experiment's init_file. For another scale, change the 10s
-- below (or load with `tunebench load tpcb --scale N`, or pgbench -i).
CREATE TABLE pgbench_branches (bid int NOT NULL, bbalance int, filler char(88)) WITH (fillfactor = 100);
CREATE TABLE pgbench_tellers (tid int NOT NULL, bid int, tbalance int, filler char(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_accounts (aid int NOT NULL, bid int, abalance int, filler char(84)) WITH (fillfactor = 100);
CREATE TABLE pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp, filler char(22));
INSERT INTO pgbench_branches (bid, bbalance) SELECT b, 0 FROM generate_series(1, 10) b;
INSERT INTO pgbench_tellers (tid, bid, tbalance) SELECT t, (t - 1) / 10 + 1, 0 FROM generate_series(1, 10 * 10) t;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) SELECT a, (a - 1) / 100000 + 1, 0, '' FROM generate_series(1, 100000 * 10) a;
ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);
VACUUM ANALYZE pgbench_branches;
VACUUM ANALYZE pgbench_tellers;
VACUUM ANALYZE pgbench_accounts;
VACUUM ANALYZE pgbench_history;
