package tpcc

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
// skipped ones).
//
// The oldest order of each district is the head of the new_order primary
// key, locked with FOR UPDATE SKIP LOCKED: when a concurrent Delivery of the
// same warehouse (virtual users sharing it) holds the oldest row, this one
// takes the next undelivered order instead of counting a false skip. The
// result is the same as running the two Deliveries one after the other, and
// a district counts as skipped only when it has no undelivered order this
// transaction can take.
const deliveryTmpl = `WITH m AS (
  SELECT g.d, (SELECT no_o_id FROM new_order WHERE no_w_id = {w} AND no_d_id = g.d
               ORDER BY no_o_id LIMIT 1 FOR UPDATE SKIP LOCKED) AS o
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
