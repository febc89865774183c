package tpcc

import (
	"fmt"
	"strconv"
	"strings"
)

// The transactions on MariaDB. MariaDB runs every statement it is sent,
// also after one that failed, so nothing of a transaction is pipelined
// past an error: each transaction is one round trip,
//   - --mode procs: one CALL of its procedure (procs_mariadb.go), which
//     starts and ends its own transaction;
//   - --mode sql: New-Order in two round trips, the others in one: a
//     multi-statement text query (MariaDB stops it at the first statement
//     that fails, and the worker then rolls back), or one prepared
//     statement for the read-only Order-Status and Stock-Level.
//
// The order lines go as one JSON parameter, [[item, supply, qty], ...],
// read by JSON_TABLE (MariaDB has no arrays). The statements have the
// same effects on the database as PostgreSQL's (txn_*.go).

// mariaCustomerByName is customerByName in MariaDB's SQL (DIV: MariaDB's
// / divides exactly).
func mariaCustomerByName(wp, dp string) string {
	return `(SELECT s.c_id FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first, c_id) AS rn, COUNT(*) OVER () AS n
		FROM customer WHERE c_w_id = ` + wp + ` AND c_d_id = ` + dp + ` AND c_last = {c_last}) s
	WHERE s.rn = (s.n + 1) DIV 2)`
}

// mariaOrderStatusTmpl is Order-Status as one statement: the customer,
// its last order (MAX over the orders_customer index) and its lines.
const mariaOrderStatusTmpl = `SELECT c.c_id, c.c_balance, c.c_first, c.c_middle, c.c_last, o.o_id, o.o_entry_d, o.o_carrier_id,
  ol.ol_i_id, ol.ol_supply_w_id, ol.ol_quantity, ol.ol_amount, ol.ol_delivery_d
FROM customer c
LEFT JOIN orders o ON o.o_w_id = c.c_w_id AND o.o_d_id = c.c_d_id
  AND o.o_id = (SELECT MAX(o_id) FROM orders WHERE o_w_id = c.c_w_id AND o_d_id = c.c_d_id AND o_c_id = c.c_id)
LEFT JOIN order_line ol ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
WHERE c.c_w_id = {w} AND c.c_d_id = {d} AND c.c_id = %CUST%
ORDER BY ol.ol_number`

// mariaStockLevel is stockLevelTmpl without PostgreSQL's cast.
var mariaStockLevel = strings.Replace(stockLevelTmpl, "::int", "", 1)

// The procedure calls of --mode procs.
const (
	mariaCallNewOrder    = `CALL tpcc_new_order({w}, {d}, {c}, {lines}, {ol_cnt}, {all_local})`
	mariaCallPayment     = `CALL tpcc_payment({w}, {d}, {cw}, {cd}, {c}, {c_last}, {amount})`
	mariaCallOrderStatus = `CALL tpcc_order_status({w}, {d}, {c}, {c_last})`
	mariaCallDelivery    = `CALL tpcc_delivery({w}, {carrier})`
	mariaCallStockLevel  = `CALL tpcc_stock_level({w}, {d}, {threshold})`
)

func (w *Worker) buildMariaStmts() {
	s := &w.st
	s.begin = plainStmt("tc_begin", "START TRANSACTION")
	s.commit = plainStmt("tc_commit", "COMMIT")
	s.rollback = plainStmt("tc_rollback", "ROLLBACK")
	all := []*stmt{s.begin, s.commit, s.rollback}
	if w.o.Mode == ModeSQL {
		s.osByID = newStmt("tc_os_id", replaceCust(mariaOrderStatusTmpl, "{c}"))
		s.osByName = newStmt("tc_os_name", replaceCust(mariaOrderStatusTmpl, mariaCustomerByName("{w}", "{d}")))
		s.stockLevel = newStmt("tc_stock_level", mariaStockLevel)
		all = append(all, s.osByID, s.osByName, s.stockLevel)
	} else {
		s.procNO = newStmt("tc_p_new_order", mariaCallNewOrder)
		s.procPay = newStmt("tc_p_payment", mariaCallPayment)
		s.procOS = newStmt("tc_p_order_status", mariaCallOrderStatus)
		s.procDelivery = newStmt("tc_p_delivery", mariaCallDelivery)
		s.procSL = newStmt("tc_p_stock_level", mariaCallStockLevel)
		all = append(all, s.procNO, s.procPay, s.procOS, s.procDelivery, s.procSL)
	}
	w.prepared = all
}

// appendLines appends the New-Order's lines as JSON.
func appendLines(b []byte, in *newOrderInput) []byte {
	b = append(b, '[')
	for i := 0; i < in.n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(in.items[i]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(in.supply[i]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(in.qty[i]), 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// allLocal is O_ALL_LOCAL: 1 when every line comes from the home warehouse.
func (in *newOrderInput) allLocal() int {
	if in.remote > 0 {
		return 0
	}
	return 1
}

func (w *Worker) setMariaNewOrder() {
	in := &w.no
	w.setInt(pW, in.w)
	w.setInt(pD, in.d)
	w.setInt(pC, in.c)
	w.text = appendLines(w.text[:0], in)
	w.sess.SetText(int(pLines), w.text)
	w.setInt(pOLCnt, in.n)
	w.setInt(pAllLocal, in.allLocal())
}

// sendBatch sends w.batch as one multi-statement query and reads every
// result.
func (w *Worker) sendBatch() error {
	if err := w.sess.SendQuery(w.batch); err != nil {
		return err
	}
	return w.sess.Receive()
}

// num appends an integer to the batch.
func (w *Worker) num(v int) { w.batch = strconv.AppendInt(w.batch, int64(v), 10) }

func (w *Worker) str(s string) { w.batch = append(w.batch, s...) }

func (w *Worker) mariaSQLAttempt(t txnType) (abort bool, err error, inCommit bool) {
	s := &w.st
	switch t {
	case txNewOrder:
		return w.mariaNewOrder()
	case txPayment:
		w.paymentBatch()
		if err := w.sendBatch(); err != nil {
			if _, code := w.sess.Classify(err, false, 1); code == mariaSubqueryRows {
				in := &w.pay
				return false, fmt.Errorf("payment: no customer in warehouse %d district %d (by name: %v): %w", in.cw, in.cd, in.byName, errUnexpected), false
			}
			return false, err, true
		}
		// The terminal's output: the SELECT before the COMMIT.
		return false, w.expectRows("payment", w.sess.Results()-2, 1), false
	case txOrderStatus:
		w.setOrderStatus()
		if w.os.byName {
			w.queue(s.osByName)
		} else {
			w.queue(s.osByID)
		}
		if err := w.roundTrip(); err != nil {
			return false, err, false
		}
		return false, w.expectSomeRows("order_status", 0), false
	case txDelivery:
		w.deliveryBatch()
		if err := w.sendBatch(); err != nil {
			return false, err, true
		}
		w.delivered = int(w.val(16, 0))
		return false, nil, false
	default:
		w.setStockLevel()
		w.queue(s.stockLevel)
		return false, w.roundTrip(), false
	}
}

// mariaNewOrder: the order number, the district's, customer's and
// warehouse's figures and the count of existing items in one round trip
// (the district's row lock taken by its update), then the writes and the
// COMMIT, or the ROLLBACK when an item does not exist.
func (w *Worker) mariaNewOrder() (abort bool, err error, inCommit bool) {
	in := &w.no
	w.newOrderFirst()
	if err := w.sendBatch(); err != nil {
		return false, err, false
	}
	if w.rows(2) != 1 {
		w.batch = append(w.batch[:0], "ROLLBACK"...)
		if err := w.sendBatch(); err != nil {
			return false, err, false
		}
		return false, fmt.Errorf("new_order: warehouse %d district %d customer %d: %w", in.w, in.d, in.c, errUnexpected), false
	}
	if int(w.val(2, 1)) < in.n {
		// Item not found (clause 2.4.2.3): roll back.
		w.batch = append(w.batch[:0], "ROLLBACK"...)
		return true, w.sendBatch(), false
	}
	w.newOrderSecond(int(w.val(2, 0)))
	if err := w.sendBatch(); err != nil {
		return false, err, true
	}
	return false, nil, false
}

// newOrderFirst is New-Order's first round trip: START TRANSACTION, the
// district's next order number (and its row lock), then the order number
// (result 2, column 0), the count of the items that exist (column 1) and
// the district's, customer's and warehouse's figures.
func (w *Worker) newOrderFirst() {
	in := &w.no
	w.batch = w.batch[:0]
	w.str("START TRANSACTION;UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ")
	w.num(in.w)
	w.str(" AND d_id = ")
	w.num(in.d)
	w.str(";SELECT d.d_next_o_id - 1, (SELECT COUNT(*) FROM item WHERE i_id IN (")
	for i := 0; i < in.n; i++ {
		if i > 0 {
			w.str(",")
		}
		w.num(int(in.items[i]))
	}
	w.str(")), d.d_tax, c.c_discount, c.c_last, c.c_credit, wh.w_tax FROM district d, customer c, warehouse wh WHERE d.d_w_id = ")
	w.num(in.w)
	w.str(" AND d.d_id = ")
	w.num(in.d)
	w.str(" AND c.c_w_id = ")
	w.num(in.w)
	w.str(" AND c.c_d_id = ")
	w.num(in.d)
	w.str(" AND c.c_id = ")
	w.num(in.c)
	w.str(" AND wh.w_id = ")
	w.num(in.w)
}

// newOrderSecond is its second: the order, its new_order row, the stock
// and the lines, COMMIT.
func (w *Worker) newOrderSecond(oid int) {
	in := &w.no
	w.batch = w.batch[:0]
	w.str("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (")
	for i, v := range [...]int{oid, in.d, in.w, in.c} {
		if i > 0 {
			w.str(",")
		}
		w.num(v)
	}
	w.str(",NOW(),NULL,")
	w.num(in.n)
	w.str(",")
	w.num(in.allLocal())
	w.str(");INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (")
	w.num(oid)
	w.str(",")
	w.num(in.d)
	w.str(",")
	w.num(in.w)
	w.str(");")
	w.text = appendLines(w.text[:0], in)
	w.batch = append(w.batch, mariaStockUpdate[0]...)
	w.batch = append(w.batch, w.text...)
	w.batch = append(w.batch, mariaStockUpdate[1]...)
	w.num(in.w)
	w.str(");")
	w.batch = append(w.batch, mariaLinesInsert[0]...)
	w.num(oid)
	w.str(",")
	w.num(in.d)
	w.str(",")
	w.num(in.w)
	w.batch = append(w.batch, mariaLinesInsert[1]...)
	w.num(in.d)
	w.batch = append(w.batch, mariaLinesInsert[2]...)
	w.batch = append(w.batch, w.text...)
	w.batch = append(w.batch, mariaLinesInsert[3]...)
	w.str(";COMMIT")
}

// The New-Order's stock update and order lines around the lines' JSON
// (and the warehouse, order and district): the stock of each line (the
// quantity wraps by adding 91 below 10 units left; remote lines count in
// S_REMOTE_CNT), then the lines with the district's S_DIST_xx and
// OL_AMOUNT = quantity * price.
var (
	mariaStockUpdate = [2]string{`UPDATE stock s JOIN JSON_TABLE('`, `', '$[*]' COLUMNS (i_id INT PATH '$[0]', sw INT PATH '$[1]', q INT PATH '$[2]')) l
  ON s.s_w_id = l.sw AND s.s_i_id = l.i_id
SET s.s_quantity = IF(s.s_quantity >= l.q + 10, s.s_quantity - l.q, s.s_quantity - l.q + 91), s.s_ytd = s.s_ytd + l.q,
  s.s_order_cnt = s.s_order_cnt + 1, s.s_remote_cnt = s.s_remote_cnt + (l.sw <> `}
	mariaLinesInsert = [4]string{`INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
SELECT `, `, l.n, l.i_id, l.sw, NULL, l.q, l.q * i.i_price,
  ELT(`, `, s.s_dist_01, s.s_dist_02, s.s_dist_03, s.s_dist_04, s.s_dist_05, s.s_dist_06, s.s_dist_07, s.s_dist_08, s.s_dist_09, s.s_dist_10)
FROM JSON_TABLE('`, `', '$[*]' COLUMNS (n FOR ORDINALITY, i_id INT PATH '$[0]', sw INT PATH '$[1]', q INT PATH '$[2]')) l
JOIN item i ON i.i_id = l.i_id JOIN stock s ON s.s_w_id = l.sw AND s.s_i_id = l.i_id`}
)

// mariaOneRow fails (error 1242, mariaSubqueryRows) unless the statement
// before it changed exactly one row: a multi-statement query stops at it.
const (
	mariaOneRow       = "DO (SELECT 1 UNION ALL SELECT 1 FROM DUAL WHERE ROW_COUNT() <> 1)"
	mariaSubqueryRows = "1242"
)

// paymentBatch is Payment as one round trip: the year-to-date amounts,
// the customer (by number, or the middle one by last name) and its
// bad-credit data, the history row, what the terminal shows (the result
// before the last), COMMIT.
func (w *Worker) paymentBatch() {
	in := &w.pay
	amount := appendDecimal(nil, int64(in.amount), 2)
	w.batch = w.batch[:0]
	w.str("START TRANSACTION;UPDATE warehouse SET w_ytd = w_ytd + ")
	w.batch = append(w.batch, amount...)
	w.str(" WHERE w_id = ")
	w.num(in.w)
	w.str(";UPDATE district SET d_ytd = d_ytd + ")
	w.batch = append(w.batch, amount...)
	w.str(" WHERE d_w_id = ")
	w.num(in.w)
	w.str(" AND d_id = ")
	w.num(in.d)
	if in.byName {
		// SELECT ... INTO, not SET @tc_c = (SELECT ...): InnoDB reads
		// for any statement but a SELECT with shared locks, which would
		// make two Payments for one name deadlock.
		w.str(";SET @tc_c = NULL;SELECT s.c_id INTO @tc_c FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first, c_id) AS rn, COUNT(*) OVER () AS n FROM customer WHERE c_w_id = ")
		w.num(in.cw)
		w.str(" AND c_d_id = ")
		w.num(in.cd)
		w.str(" AND c_last = '")
		w.batch = AppendLastName(w.batch, in.lastNum)
		w.str("') s WHERE s.rn = (s.n + 1) DIV 2")
	} else {
		w.str(";SET @tc_c = ")
		w.num(in.c)
	}
	w.str(";UPDATE customer SET c_balance = c_balance - ")
	w.batch = append(w.batch, amount...)
	w.str(", c_ytd_payment = c_ytd_payment + ")
	w.batch = append(w.batch, amount...)
	w.str(", c_payment_cnt = c_payment_cnt + 1, c_data = IF(c_credit = 'BC', LEFT(CONCAT(c_id, ' ', c_d_id, ' ', c_w_id, ' ")
	w.num(in.d)
	w.str(" ")
	w.num(in.w)
	w.str(" ")
	w.batch = append(w.batch, amount...)
	w.str(" | ', c_data), 500), c_data) WHERE c_w_id = ")
	w.num(in.cw)
	w.str(" AND c_d_id = ")
	w.num(in.cd)
	// No customer: the batch stops here (error 1242) before the history
	// row and the COMMIT, and the worker rolls back.
	w.str(" AND c_id = @tc_c;" + mariaOneRow + ";INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) SELECT @tc_c, ")
	for _, v := range [...]int{in.cd, in.cw, in.d, in.w} {
		w.num(v)
		w.str(", ")
	}
	w.str("NOW(), ")
	w.batch = append(w.batch, amount...)
	w.str(", CONCAT(w_name, '    ', d_name) FROM warehouse, district WHERE w_id = ")
	w.num(in.w)
	w.str(" AND d_w_id = ")
	w.num(in.w)
	w.str(" AND d_id = ")
	w.num(in.d)
	w.str(";SELECT c.c_id, c.c_first, c.c_middle, c.c_last, c.c_balance, c.c_credit, IF(c.c_credit = 'BC', LEFT(c.c_data, 200), NULL), wh.w_name, d.d_name FROM customer c, warehouse wh, district d WHERE c.c_w_id = ")
	w.num(in.cw)
	w.str(" AND c.c_d_id = ")
	w.num(in.cd)
	w.str(" AND c.c_id = @tc_c AND wh.w_id = ")
	w.num(in.w)
	w.str(" AND d.d_w_id = ")
	w.num(in.w)
	w.str(" AND d.d_id = ")
	w.num(in.d)
	w.str(";COMMIT")
}

// deliveryBatch is Delivery as one round trip: the oldest undelivered
// order of each district, locked (FOR UPDATE: at every isolation level
// InnoDB's locking read waits for a concurrent Delivery and then reads
// the latest rows, so it takes the next order when that one was
// delivered), into @tc_o1..@tc_o10 (NULL: none, the district is
// skipped); then set-based: the new_order rows, the carriers, the lines'
// delivery dates, the customers' balances and delivery counts; the count
// of districts delivered (result 16); COMMIT.
func (w *Worker) deliveryBatch() {
	wh := w.dl.w
	w.batch = w.batch[:0]
	w.str("START TRANSACTION;SET @tc_o1 = NULL, @tc_o2 = NULL, @tc_o3 = NULL, @tc_o4 = NULL, @tc_o5 = NULL, @tc_o6 = NULL, @tc_o7 = NULL, @tc_o8 = NULL, @tc_o9 = NULL, @tc_o10 = NULL")
	for d := 1; d <= DistrictsPerWarehouse; d++ {
		w.str(";SELECT no_o_id INTO @tc_o")
		w.num(d)
		w.str(" FROM new_order WHERE no_w_id = ")
		w.num(wh)
		w.str(" AND no_d_id = ")
		w.num(d)
		w.str(" ORDER BY no_o_id LIMIT 1 FOR UPDATE")
	}
	list := func(a, b string) {
		w.str(" AND (")
		w.str(a)
		w.str(", ")
		w.str(b)
		w.str(") IN (")
		for d := 1; d <= DistrictsPerWarehouse; d++ {
			if d > 1 {
				w.str(",")
			}
			w.str("(")
			w.num(d)
			w.str(",@tc_o")
			w.num(d)
			w.str(")")
		}
		w.str(")")
	}
	w.str(";DELETE FROM new_order WHERE no_w_id = ")
	w.num(wh)
	list("no_d_id", "no_o_id")
	w.str(";UPDATE orders SET o_carrier_id = ")
	w.num(w.dl.carrier)
	w.str(" WHERE o_w_id = ")
	w.num(wh)
	list("o_d_id", "o_id")
	w.str(";UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = ")
	w.num(wh)
	list("ol_d_id", "ol_o_id")
	w.str(";UPDATE customer c JOIN (SELECT o.o_d_id, o.o_c_id, SUM(ol.ol_amount) AS s FROM orders o JOIN order_line ol ON ol.ol_w_id = o.o_w_id AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id WHERE o.o_w_id = ")
	w.num(wh)
	list("o.o_d_id", "o.o_id")
	w.str(" GROUP BY o.o_d_id, o.o_c_id) a ON c.c_w_id = ")
	w.num(wh)
	w.str(" AND c.c_d_id = a.o_d_id AND c.c_id = a.o_c_id SET c.c_balance = c.c_balance + a.s, c.c_delivery_cnt = c.c_delivery_cnt + 1;SELECT ")
	for d := 1; d <= DistrictsPerWarehouse; d++ {
		if d > 1 {
			w.str(" + ")
		}
		w.str("(@tc_o")
		w.num(d)
		w.str(" IS NOT NULL)")
	}
	w.str(";COMMIT")
}
