package dbgen

// Orders and their lineitems come from the same streams: an order's total
// price and status are computed from its lineitems, so generating orders
// draws the lineitems' quantities, discounts, taxes, parts and ship dates,
// and generating lineitems draws the order's date and line count.

// The order keys are sparse: of every 32 keys only the first 8 are used by
// the base data; the refresh function RF1 inserts keys from the next 8
// (clause 4.2.3, O_ORDERKEY; dbgen's mk_sparse with SPARSE_BITS 2,
// SPARSE_KEEP 3).
const (
	sparseBits = 2
	sparseKeep = 3
)

// orderKey is the key of the index-th order (1-based) of update set seq (0
// for the base data).
func orderKey(index int64, seq int64) int64 {
	low := index & (1<<sparseKeep - 1)
	k := index >> sparseKeep << sparseBits
	k += seq
	return k<<sparseKeep + low
}

// OrderKey is the key of the index-th base order (1-based).
func OrderKey(index int64) int64 { return orderKey(index, 0) }

// The order dates leave room for the last lineitem's ship (up to 121 days)
// and receipt (up to 30 days) before the end of the date range.
const orderDateMax = dateRange - 151 - 1

// orderStreams are the streams of an order and its lines.
type orderStreams struct {
	date, lines                     stream
	customer                        keyStream
	priority, clerk                 stream
	comment                         text
	quantity, discount, tax, shipOn stream
	part                            keyStream
	supplier, commitOn, receiptOn   stream
	flag, instruct, mode            stream
	lineComment                     text
}

func (g *Generator) newOrderStreams(first int64) *orderStreams {
	wide := g.sf >= 30000
	o := &orderStreams{
		date:        newStream(1066728069, 1),
		lines:       newStream(1434868289, 1),
		customer:    newKeyStream(851767375, count(customerBase, g.sf), 1, wide),
		priority:    newStream(591449447, 1),
		clerk:       newStream(1171034773, 1),
		comment:     newText(276090261, 49, 1),
		quantity:    newStream(209208115, maxLines),
		discount:    newStream(554590007, maxLines),
		tax:         newStream(721958466, maxLines),
		shipOn:      newStream(1769349045, maxLines),
		part:        newKeyStream(1808217256, count(partBase, g.sf), maxLines, wide),
		supplier:    newStream(2095021727, maxLines),
		commitOn:    newStream(904914315, maxLines),
		receiptOn:   newStream(373135028, maxLines),
		flag:        newStream(717419739, maxLines),
		instruct:    newStream(1371272478, maxLines),
		mode:        newStream(675466456, maxLines),
		lineComment: newText(1095462486, 27, maxLines),
	}
	for _, s := range o.plain() {
		s.skipRows(first)
	}
	o.customer.skipRows(first)
	o.part.skipRows(first)
	return o
}

func (o *orderStreams) plain() []*stream {
	return []*stream{
		&o.date, &o.lines, &o.priority, &o.clerk, &o.comment.s,
		&o.quantity, &o.discount, &o.tax, &o.shipOn,
		&o.supplier, &o.commitOn, &o.receiptOn, &o.flag, &o.instruct, &o.mode, &o.lineComment.s,
	}
}

func (o *orderStreams) rowDone() {
	for _, s := range o.plain() {
		s.rowDone()
	}
	o.customer.rowDone()
	o.part.rowDone()
}

// lineTotal is a lineitem's contribution to O_TOTALPRICE in cents:
// extended price less discount plus tax, each step truncated to cents
// (clause 4.2.3).
func lineTotal(extended, discount, tax int64) int64 {
	return extended * (100 - discount) / 100 * (100 + tax) / 100
}

// updateFirst is where update set upd (1-based) starts: its orders follow
// the base orders in every stream, one set after another.
func (g *Generator) updateFirst(upd int64) int64 {
	return count(ordersBase, g.sf) + (upd-1)*RefreshOrders(g.sf)
}

// RefreshOrders is how many orders one refresh pair inserts and deletes:
// 0.1% of ORDERS (SF·1500; clause 2.6), computed as dbgen does: the order
// count in whole ten-thousands, times 10 (so 10, not 15, at SF 0.01).
func RefreshOrders(sf float64) int64 {
	return max(count(ordersBase, sf)/10000*10, 1)
}

// orders writes orders [first, first+n) of the base data (upd 0) or of
// update set upd.
func (g *Generator) orders(w *writer, first, n, upd int64) {
	pos, index0, seq := first, first, int64(0)
	if upd > 0 {
		pos = g.updateFirst(upd) + first
		index0 = (upd-1)*RefreshOrders(g.sf) + first
		seq = 1
	}
	o := g.newOrderStreams(pos)
	maxCustomer := count(customerBase, g.sf)
	maxClerk := max(int32(g.sf*clerkBase), clerkBase)
	for i := int64(1); i <= n; i++ {
		date := o.date.intIn(0, orderDateMax)
		// A third of the customers place no orders: keys divisible by 3 are
		// moved to a neighbour (clause 4.2.3, O_CUSTKEY).
		customer := o.customer.next()
		delta := int64(1)
		for customer%3 == 0 {
			customer = min(customer+delta, maxCustomer)
			delta = -delta
		}
		lines := o.lines.intIn(1, maxLines)
		var total int64
		shipped := int32(0)
		for range lines {
			q := int64(o.quantity.intIn(1, 50))
			d := int64(o.discount.intIn(0, 10))
			t := int64(o.tax.intIn(0, 8))
			p := o.part.next()
			total += lineTotal(partPrice(p)*q, d, t)
			if inPast(date + o.shipOn.intIn(1, 121)) {
				shipped++
			}
		}
		status := "O"
		switch {
		case shipped == lines:
			status = "F"
		case shipped > 0:
			status = "P"
		}
		w.row(9)
		w.key(orderKey(index0+i, seq))
		w.int(customer)
		w.str(status)
		w.money(total)
		w.date(date)
		w.str(priorities.draw(&o.priority))
		w.padded("Clerk#", int64(o.clerk.intIn(1, maxClerk)))
		w.int(0)
		w.bytes(o.comment.next(g.pool))
		w.end()
		o.rowDone()
	}
}

// lineitems writes the lines of orders [first, first+n) of the base data
// (upd 0) or of update set upd.
func (g *Generator) lineitems(w *writer, first, n, upd int64) {
	pos, index0, seq := first, first, int64(0)
	if upd > 0 {
		pos = g.updateFirst(upd) + first
		index0 = (upd-1)*RefreshOrders(g.sf) + first
		seq = 1
	}
	o := g.newOrderStreams(pos)
	suppliers := count(supplierBase, g.sf)
	for i := int64(1); i <= n; i++ {
		key := orderKey(index0+i, seq)
		date := o.date.intIn(0, orderDateMax)
		lines := o.lines.intIn(1, maxLines)
		for line := range lines {
			q := int64(o.quantity.intIn(1, 50))
			d := int64(o.discount.intIn(0, 10))
			t := int64(o.tax.intIn(0, 8))
			p := o.part.next()
			s := PartSupplier(p, int64(o.supplier.intIn(0, 3)), suppliers)
			ship := date + o.shipOn.intIn(1, 121)
			commit := date + o.commitOn.intIn(30, 90)
			receipt := ship + o.receiptOn.intIn(1, 30)
			w.row(16)
			w.key(key)
			w.int(p)
			w.int(s)
			w.int(int64(line + 1))
			w.quantity(q)
			w.money(partPrice(p) * q)
			w.money(d)
			w.money(t)
			if inPast(receipt) {
				w.str(returnFlags.draw(&o.flag))
			} else {
				w.str("N")
			}
			if inPast(ship) {
				w.str("F")
			} else {
				w.str("O")
			}
			w.date(ship)
			w.date(commit)
			w.date(receipt)
			w.str(shipInstructions.draw(&o.instruct))
			w.str(shipModes.draw(&o.mode))
			w.bytes(o.lineComment.next(g.pool))
			w.end()
		}
		o.rowDone()
	}
}

// AppendUpdate appends the rows of orders [first, first+n) (0-based) of
// update set upd (1-based) to buf, for table Orders or Lineitem: the rows
// RF1 inserts, as dbgen -U writes them to orders.tbl.u<upd> and
// lineitem.tbl.u<upd>.
func (g *Generator) AppendUpdate(buf []byte, t Table, upd, first, n int64) ([]byte, int64) {
	w := g.writer(buf)
	if t == Orders {
		g.orders(&w, first, n, upd)
	} else {
		g.lineitems(&w, first, n, upd)
	}
	return w.buf, w.rows
}

// DeleteKeys returns the order keys RF2 deletes in update set upd (1-based),
// as dbgen -U writes them to delete.<upd>: the base orders in key order,
// RefreshOrders(sf) per set.
func DeleteKeys(sf float64, upd int64) []int64 {
	n := RefreshOrders(sf)
	keys := make([]int64, n)
	for i := range n {
		keys[i] = OrderKey((upd-1)*n + i + 1)
	}
	return keys
}
