package tpcc

import "strings"

// Delivery (clause 2.7).
//
// Delivery runs synchronously, as a normal transaction of the virtual user,
// like every public TPC-C driver (HammerDB, go-tpc, BenchBase, CockroachDB);
// the spec's deferred execution through a queue (clause 2.7.2.2) is not
// emulated, so its response time is that of the database work.

// deliveryInput are the inputs of one Delivery (clause 2.7.1).
type deliveryInput struct {
	w       int
	carrier int
}

func (t *terminal) drawDelivery(in *deliveryInput, w int) {
	in.w = w
	in.carrier = Uniform(t.rng, 1, 10)
}

// deliveryTmpl delivers, in each of the warehouse's 10 districts, its
// oldest undelivered order (clause 2.7.4.2): deletes the new_order row with
// the lowest order number, sets the order's carrier, stamps its lines'
// delivery date, and adds the sum of the lines' amounts to the customer's
// balance and one to its delivery count. A district without new_order rows
// is skipped. It returns the number of districts delivered (10 minus the
// skipped ones). It is the template of deliverySQL with the oldest order's
// lock clause left as {lock}... in text: see deliverySQL.
//
// How the oldest order is locked depends on the isolation level, so that
// two Deliveries of one warehouse (virtual users sharing it) never leave a
// gap in new_order (consistency condition 3) and never skip a district
// that has an undelivered order:
//   - read committed: FOR UPDATE SKIP LOCKED. When a concurrent Delivery
//     holds the oldest row, this one takes the next undelivered order (a
//     plain FOR UPDATE with LIMIT 1 would wait, find the row deleted and
//     return none: a false skip). The holder rolls back only on a deadlock
//     or a lost connection, which are rare here.
//   - repeatable read and serializable: FOR UPDATE. A concurrent Delivery
//     waits for the holder; if it commits, the waiter gets a serialization
//     failure and is retried; if it rolls back (serialization failures are
//     common at these levels), the waiter takes the row. With SKIP LOCKED
//     a holder that gives up after its last try would leave its order
//     behind a younger delivered one: a gap.
const deliveryTmpl = `WITH m AS (
  SELECT g.d, (SELECT no_o_id FROM new_order WHERE no_w_id = {w} AND no_d_id = g.d
               ORDER BY no_o_id LIMIT 1 ` + deliveryLockMark + `) AS o
  FROM generate_series(1, 10) AS g(d)),
no AS (
  DELETE FROM new_order USING m
  WHERE no_w_id = {w} AND no_d_id = m.d AND no_o_id = m.o
  RETURNING no_d_id, no_o_id),
o AS (
  UPDATE orders SET o_carrier_id = {carrier} FROM no
  WHERE o_w_id = {w} AND o_d_id = no.no_d_id AND o_id = no.no_o_id
  RETURNING o_d_id, o_id, o_c_id),
ol AS (
  UPDATE order_line SET ol_delivery_d = now() FROM no
  WHERE ol_w_id = {w} AND ol_d_id = no.no_d_id AND ol_o_id = no.no_o_id
  RETURNING ol_d_id, ol_o_id, ol_amount),
amt AS (
  SELECT o.o_d_id, o.o_c_id, sum(ol.ol_amount) AS s FROM o
  JOIN ol ON ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id
  GROUP BY o.o_d_id, o.o_c_id),
c AS (
  UPDATE customer SET c_balance = c_balance + amt.s, c_delivery_cnt = c_delivery_cnt + 1
  FROM amt WHERE c_w_id = {w} AND c_d_id = amt.o_d_id AND c_id = amt.o_c_id
  RETURNING c_d_id)
SELECT count(*)::int FROM no`

// deliveryLockMark stands for the lock clause in deliveryTmpl.
const deliveryLockMark = "FOR UPDATE /*lock*/"

// deliverySQL is the Delivery template for an isolation level
// (isolationSQL's value): see deliveryTmpl.
func deliverySQL(isolation string) string {
	if isolation == isolationSQL["read-committed"] {
		return strings.Replace(deliveryTmpl, deliveryLockMark, "FOR UPDATE SKIP LOCKED", 1)
	}
	return strings.Replace(deliveryTmpl, deliveryLockMark, "FOR UPDATE", 1)
}
