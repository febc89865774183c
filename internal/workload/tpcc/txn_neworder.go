package tpcc

import "sort"

// New-Order (clause 2.4).

// UnusedItemID is the item number given to the last order line of the 1%
// of New-Orders that must roll back (clause 2.4.1.4): no item has it, so
// the transaction finds "item not found" and is rolled back. Such a
// transaction is counted as user_abort and never committed (HammerDB's
// PostgreSQL functions commit it with a bogus line).
const UnusedItemID = Items + 1

// SQLStateItemNotFound is the SQLSTATE that tpcc_new_order raises when an
// item does not exist: the error rolls the function's work back and the
// worker counts the transaction as user_abort.
const SQLStateItemNotFound = "TB001"

// newOrderInput are the inputs of one New-Order (clause 2.4.1).
type newOrderInput struct {
	w, d, c  int
	n        int // ol_cnt
	items    [MaxOrderLines]int32
	supply   [MaxOrderLines]int32
	qty      [MaxOrderLines]int32
	remote   int  // lines supplied by another warehouse
	rollback bool // the last line has UnusedItemID
}

// drawNewOrder draws the inputs of a New-Order for warehouse w.
//
// Item numbers are drawn with NURand(8191, 1, 100000) and made unique within
// the order (a repeated number is drawn again), and the lines are sorted by
// item number. Unique items keep the set-based stock update exact (one
// update per stock row); the sort gives every New-Order the same lock order
// on stock rows, which avoids deadlocks between concurrent New-Orders. The
// unused item of a rollback sorts last, where clause 2.4.1.4 puts it.
func (t *terminal) drawNewOrder(in *newOrderInput, w int) {
	r := t.rng
	in.w = w
	in.d = t.district()
	in.c = t.c.CustomerID(r)
	in.n = Uniform(r, MinOrderLines, MaxOrderLines)
	in.rollback = Uniform(r, 1, 100) == 1
	in.remote = 0
	for i := 0; i < in.n; i++ {
		var item int
		if i == in.n-1 && in.rollback {
			item = UnusedItemID
		} else {
			item = t.c.ItemID(r)
			for in.has(i, item) {
				item = t.c.ItemID(r)
			}
		}
		sw := w
		// Clause 2.4.1.5: a line is supplied by a remote warehouse with
		// probability 1%, chosen uniformly among the others.
		if Uniform(r, 1, 100) == 1 && t.warehouses > 1 {
			sw = t.otherWarehouse(w)
			in.remote++
		}
		in.items[i] = int32(item)
		in.supply[i] = int32(sw)
		in.qty[i] = int32(Uniform(r, 1, 10))
	}
	sort.Sort(linesByItem{in})
}

// has reports whether one of the first n lines orders item.
func (in *newOrderInput) has(n, item int) bool {
	for j := 0; j < n; j++ {
		if int(in.items[j]) == item {
			return true
		}
	}
	return false
}

type linesByItem struct{ in *newOrderInput }

func (l linesByItem) Len() int           { return l.in.n }
func (l linesByItem) Less(i, j int) bool { return l.in.items[i] < l.in.items[j] }
func (l linesByItem) Swap(i, j int) {
	in := l.in
	in.items[i], in.items[j] = in.items[j], in.items[i]
	in.supply[i], in.supply[j] = in.supply[j], in.supply[i]
	in.qty[i], in.qty[j] = in.qty[j], in.qty[i]
}

// The New-Order statements (clause 2.4.2.2). --mode sql sends
// BEGIN, noDistrict, noCustomer and noItems in one round trip; if every
// item exists, noOrder, noLines and COMMIT in a second one, else ROLLBACK.
// tpcc_new_order runs noDistrict, noCustomer, noOrder and noLines and raises
// SQLStateItemNotFound when noLines found fewer items than ordered.
const (
	// noDistrict takes the next order number (and locks the district).
	noDistrict = `UPDATE district SET d_next_o_id = d_next_o_id + 1
WHERE d_w_id = {w} AND d_id = {d}
RETURNING d_tax, d_next_o_id - 1`

	noCustomer = `SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse
WHERE w_id = {w} AND c_w_id = {w} AND c_d_id = {d} AND c_id = {c}`

	noItems = `SELECT count(*)::int FROM item WHERE i_id = ANY({items})`

	// noOrder inserts the order and its new_order row. O_ALL_LOCAL is 1
	// when every line is supplied by the home warehouse.
	noOrder = `WITH o AS (
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
  VALUES ({o_id}, {d}, {w}, {c}, now(), NULL, cardinality({items}), CASE WHEN {w} = ALL({supply}) THEN 1 ELSE 0 END)
  RETURNING o_id)
INSERT INTO new_order (no_o_id, no_d_id, no_w_id) SELECT o_id, {d}, {w} FROM o`

	// noLines updates the stock of every line (clause 2.4.2.2: the quantity
	// wraps by adding 91 below 10 units left; remote lines count in
	// S_REMOTE_CNT) and inserts the order lines with the district's
	// S_DIST_xx and OL_AMOUNT = quantity * price. It returns the number of
	// lines inserted (fewer than ordered when an item does not exist) and
	// their total amount.
	noLines = `WITH l AS (
  SELECT * FROM unnest({items}::int[], {supply}::int[], {qty}::int[]) WITH ORDINALITY AS l(i_id, sw, q, n)),
s AS (
  UPDATE stock SET
    s_quantity = CASE WHEN s_quantity >= l.q + 10 THEN s_quantity - l.q ELSE s_quantity - l.q + 91 END,
    s_ytd = s_ytd + l.q,
    s_order_cnt = s_order_cnt + 1,
    s_remote_cnt = s_remote_cnt + CASE WHEN l.sw <> {w} THEN 1 ELSE 0 END
  FROM l WHERE s_w_id = l.sw AND s_i_id = l.i_id
  RETURNING l.n, l.i_id, l.sw, l.q, s_quantity, s_data,
    CASE {d} WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04
      WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08
      WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS dist),
ins AS (
  INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
  SELECT {o_id}, {d}, {w}, s.n, s.i_id, s.sw, NULL, s.q, s.q * i.i_price, s.dist
  FROM s JOIN item i ON i.i_id = s.i_id
  RETURNING ol_amount)
SELECT count(*)::int, coalesce(sum(ol_amount), 0) FROM ins`
)
