package tpcc

import (
	"context"
	"fmt"
	"hash/crc32"
	"strings"
)

// --mode procs on MariaDB: the five transactions as stored procedures,
// one CALL per transaction. Each procedure that writes starts and ends
// its own transaction (COMMIT, or ROLLBACK for New-Order's unused item:
// both count in Com_commit and Com_rollback, HammerDB's TPM on MariaDB),
// and an error rolls it back before it goes to the client (the exit
// handler), so that a deadlock or a lock wait timeout never leaves half
// a transaction. The read-only ones run in a READ ONLY transaction, so
// that they count in TPM as PostgreSQL's do. The statements are those of
// --mode sql (mariadb_run.go) with the inputs as arguments.

// mariaProcHandler rolls back and passes the error on.
const mariaProcHandler = `DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;`

// mariaLines is the JSON_TABLE of New-Order's lines argument.
const mariaLines = `JSON_TABLE(p_lines, '$[*]' COLUMNS (n FOR ORDINALITY, i_id INT PATH '$[0]', sw INT PATH '$[1]', q INT PATH '$[2]')) l`

// mariaByName sets v_c to the middle customer of the district with last
// name p_c_last (customerByName's rule), or to p_c when it is NULL.
func mariaByName(wp, dp string) string {
	return `IF p_c_last IS NULL THEN
    SET v_c = p_c;
  ELSE
    SELECT s.c_id INTO v_c FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first, c_id) AS rn, COUNT(*) OVER () AS n
      FROM customer WHERE c_w_id = ` + wp + ` AND c_d_id = ` + dp + ` AND c_last = p_c_last) s WHERE s.rn = (s.n + 1) DIV 2;
  END IF;`
}

// mariaProcDDL are the CREATE PROCEDURE statements, in ProcNames' order.
func mariaProcDDL() []string {
	return []string{
		`CREATE PROCEDURE tpcc_new_order(p_w INT, p_d INT, p_c INT, p_lines TEXT, p_ol_cnt INT, p_all_local INT)
BEGIN
  DECLARE v_o_id INT DEFAULT NULL;
  DECLARE v_d_tax, v_w_tax, v_discount DECIMAL(4,4);
  DECLARE v_last VARCHAR(16) DEFAULT NULL;
  DECLARE v_credit CHAR(2);
  DECLARE v_items INT;
  ` + mariaProcHandler + `
  START TRANSACTION;
  UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d;
  SELECT d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax FROM district WHERE d_w_id = p_w AND d_id = p_d;
  SELECT c.c_discount, c.c_last, c.c_credit, wh.w_tax INTO v_discount, v_last, v_credit, v_w_tax
    FROM customer c, warehouse wh WHERE wh.w_id = p_w AND c.c_w_id = p_w AND c.c_d_id = p_d AND c.c_id = p_c;
  IF v_o_id IS NULL OR v_last IS NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tpcc_new_order: no such district or customer';
  END IF;
  SELECT COUNT(*) INTO v_items FROM ` + mariaLines + ` JOIN item i ON i.i_id = l.i_id;
  IF v_items < p_ol_cnt THEN
    -- an unused item (clause 2.4.2.3): the transaction is rolled back
    ROLLBACK;
    SELECT 0 AS o_id;
  ELSE
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
      VALUES (v_o_id, p_d, p_w, p_c, NOW(), NULL, p_ol_cnt, p_all_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
    UPDATE stock s JOIN ` + mariaLines + ` ON s.s_w_id = l.sw AND s.s_i_id = l.i_id
      SET s.s_quantity = IF(s.s_quantity >= l.q + 10, s.s_quantity - l.q, s.s_quantity - l.q + 91), s.s_ytd = s.s_ytd + l.q,
        s.s_order_cnt = s.s_order_cnt + 1, s.s_remote_cnt = s.s_remote_cnt + (l.sw <> p_w);
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
      SELECT v_o_id, p_d, p_w, l.n, l.i_id, l.sw, NULL, l.q, l.q * i.i_price,
        ELT(p_d, s.s_dist_01, s.s_dist_02, s.s_dist_03, s.s_dist_04, s.s_dist_05, s.s_dist_06, s.s_dist_07, s.s_dist_08, s.s_dist_09, s.s_dist_10)
      FROM ` + mariaLines + ` JOIN item i ON i.i_id = l.i_id JOIN stock s ON s.s_w_id = l.sw AND s.s_i_id = l.i_id;
    COMMIT;
    SELECT v_o_id AS o_id;
  END IF;
END`,

		`CREATE PROCEDURE tpcc_payment(p_w INT, p_d INT, p_cw INT, p_cd INT, p_c INT, p_c_last VARCHAR(16), p_amount DECIMAL(6,2))
BEGIN
  DECLARE v_c INT DEFAULT NULL;
  ` + mariaProcHandler + `
  START TRANSACTION;
  UPDATE warehouse SET w_ytd = w_ytd + p_amount WHERE w_id = p_w;
  UPDATE district SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d;
  ` + mariaByName("p_cw", "p_cd") + `
  UPDATE customer SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount, c_payment_cnt = c_payment_cnt + 1,
    c_data = IF(c_credit = 'BC', LEFT(CONCAT(c_id, ' ', c_d_id, ' ', c_w_id, ' ', p_d, ' ', p_w, ' ', p_amount, ' | ', c_data), 500), c_data)
    WHERE c_w_id = p_cw AND c_d_id = p_cd AND c_id = v_c;
  IF ROW_COUNT() <> 1 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'tpcc_payment: no such customer';
  END IF;
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    SELECT v_c, p_cd, p_cw, p_d, p_w, NOW(), p_amount, CONCAT(w_name, '    ', d_name) FROM warehouse, district
    WHERE w_id = p_w AND d_w_id = p_w AND d_id = p_d;
  SELECT c.c_id, c.c_first, c.c_middle, c.c_last, c.c_balance, c.c_credit, IF(c.c_credit = 'BC', LEFT(c.c_data, 200), NULL) AS c_data, wh.w_name, d.d_name
    FROM customer c, warehouse wh, district d
    WHERE c.c_w_id = p_cw AND c.c_d_id = p_cd AND c.c_id = v_c AND wh.w_id = p_w AND d.d_w_id = p_w AND d.d_id = p_d;
  COMMIT;
END`,

		`CREATE PROCEDURE tpcc_order_status(p_w INT, p_d INT, p_c INT, p_c_last VARCHAR(16))
BEGIN
  DECLARE v_c INT DEFAULT NULL;
  ` + mariaProcHandler + `
  START TRANSACTION READ ONLY;
  ` + mariaByName("p_w", "p_d") + `
  ` + strings.NewReplacer("{w}", "p_w", "{d}", "p_d", "%CUST%", "v_c").Replace(mariaOrderStatusTmpl) + `;
  COMMIT;
END`,

		`CREATE PROCEDURE tpcc_delivery(p_w INT, p_carrier INT)
BEGIN
  DECLARE v_d INT DEFAULT 1;
  DECLARE v_o, v_c INT;
  DECLARE v_amount DECIMAL(12,2);
  DECLARE v_done INT DEFAULT 0;
  ` + mariaProcHandler + `
  START TRANSACTION;
  WHILE v_d <= 10 DO
    SET v_o = NULL;
    -- the oldest undelivered order (see deliveryBatch on the lock)
    SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d ORDER BY no_o_id LIMIT 1 FOR UPDATE;
    IF v_o IS NOT NULL THEN
      DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
      UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
      SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
      UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
      SELECT SUM(ol_amount) INTO v_amount FROM order_line WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
      UPDATE customer SET c_balance = c_balance + v_amount, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
      SET v_done = v_done + 1;
    END IF;
    SET v_d = v_d + 1;
  END WHILE;
  COMMIT;
  SELECT v_done AS delivered;
END`,

		`CREATE PROCEDURE tpcc_stock_level(p_w INT, p_d INT, p_threshold INT)
BEGIN
  ` + mariaProcHandler + `
  START TRANSACTION READ ONLY;
  ` + strings.NewReplacer("{w}", "p_w", "{d}", "p_d", "{threshold}", "p_threshold").Replace(mariaStockLevel) + `;
  COMMIT;
END`,
	}
}

// mariaProcsVersion marks the procedures' text in their comment, so that
// a run replaces those an older tunebench made.
func mariaProcsVersion() string {
	var b strings.Builder
	for _, d := range mariaProcDDL() {
		b.WriteString(d)
	}
	return fmt.Sprintf("tunebench tpcc %08x", crc32.ChecksumIEEE([]byte(b.String())))
}

// installProcs creates the procedures unless they are there with this
// version's text. One installer at a time (the shards of a split run):
// GET_LOCK; DDL commits on its own in MariaDB, so each procedure is
// dropped and made again under the lock.
func (s *mariaSide) installProcs(ctx context.Context) error {
	version := mariaProcsVersion()
	var got int
	if err := s.a.QueryRow(ctx, "SELECT GET_LOCK(CONCAT(DATABASE(), '/tunebench tpcc procs'), 60)").Scan(&got); err != nil {
		return err
	}
	if got != 1 {
		return fmt.Errorf("another run holds the lock on the tpcc procedures for more than 60 s")
	}
	defer func() {
		_, _ = s.a.Exec(context.WithoutCancel(ctx), "DO RELEASE_LOCK(CONCAT(DATABASE(), '/tunebench tpcc procs'))")
	}()
	var have int
	if err := s.a.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE' AND ROUTINE_COMMENT = ?",
		version).Scan(&have); err != nil {
		return err
	}
	if have == len(ProcNames) {
		return nil
	}
	for i, ddl := range mariaProcDDL() {
		name := ProcNames[i]
		if _, err := s.a.Exec(ctx, "DROP PROCEDURE IF EXISTS "+name); err != nil {
			return fmt.Errorf("dropping procedure %s: %w", name, err)
		}
		// The comment goes between the parameters and the body.
		ddl = strings.Replace(ddl, ")\nBEGIN", ")\nMODIFIES SQL DATA COMMENT '"+version+"'\nBEGIN", 1)
		if _, err := s.a.Exec(ctx, ddl); err != nil {
			return fmt.Errorf("creating procedure %s: %w", name, err)
		}
	}
	return nil
}
