-- pgbench's tpcb-like transaction with a skewed account choice: a few
-- accounts are hot. The skew comes from outside: -D skew=S (S from 1.001
-- to 1000; the larger, the hotter the first accounts), e.g.
--   tunebench run script -f examples/scripts/zipfian-update.sql -D skew=1.2
--   pgbench -f examples/scripts/zipfian-update.sql -D skew=1.2
\set aid random_zipfian(1, 100000 * :scale, :skew)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
