package tpcc

import "strings"

// Order-Status (clause 2.6).

// orderStatusInput are the inputs of one Order-Status (clause 2.6.1).
type orderStatusInput struct {
	w, d    int
	c       int // customer id, when !byName
	byName  bool
	lastNum int
}

// drawOrderStatus draws the inputs of an Order-Status for warehouse w: the
// customer is selected by last name in 60% of the cases (clause 2.6.1.2).
func (t *terminal) drawOrderStatus(in *orderStatusInput, w int) {
	r := t.rng
	in.w = w
	in.d = t.district()
	in.byName = Uniform(r, 1, 100) <= 60
	if in.byName {
		in.lastNum = t.c.LastNameNumber(r)
		in.c = 0
	} else {
		in.c = t.c.CustomerID(r)
		in.lastNum = 0
	}
}

// orderStatusTmpl is the whole Order-Status as one read-only statement
// (clause 2.6.2.2): the customer, its most recent order (the
// orders_customer index) and that order's lines, one row per line. A
// single statement reads from one snapshot, so the order and its lines are
// consistent at any isolation level.
const orderStatusTmpl = `WITH c AS (
  SELECT c_id, c_balance, c_first, c_middle, c_last FROM customer
  WHERE c_w_id = {w} AND c_d_id = {d} AND c_id = %CUST%),
o AS (
  SELECT o_id, o_entry_d, o_carrier_id FROM orders
  WHERE o_w_id = {w} AND o_d_id = {d} AND o_c_id = (SELECT c_id FROM c)
  ORDER BY o_id DESC LIMIT 1)
SELECT c.c_id, c.c_balance, c.c_first, c.c_middle, c.c_last, o.o_id, o.o_entry_d, o.o_carrier_id,
  ol.ol_i_id, ol.ol_supply_w_id, ol.ol_quantity, ol.ol_amount, ol.ol_delivery_d
FROM c LEFT JOIN o ON true
LEFT JOIN order_line ol ON ol.ol_w_id = {w} AND ol.ol_d_id = {d} AND ol.ol_o_id = o.o_id
ORDER BY ol.ol_number`

// orderStatusColumns is the result type declared by tpcc_order_status.
const orderStatusColumns = `c_id int, c_balance numeric, c_first varchar, c_middle char(2), c_last varchar,
  o_id int, o_entry_d timestamp, o_carrier_id int, ol_i_id int, ol_supply_w_id int, ol_quantity int,
  ol_amount numeric, ol_delivery_d timestamp`

var (
	orderStatusByID   = replaceCust(orderStatusTmpl, "{c}")
	orderStatusByName = replaceCust(orderStatusTmpl, customerByName("{w}", "{d}"))
)

// replaceCust puts the customer selection into a template.
func replaceCust(tmpl, cust string) string { return strings.Replace(tmpl, "%CUST%", cust, 1) }
