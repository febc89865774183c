package tpcc

import "fmt"

// --mode sql: the transactions' statements sent by the client as prepared
// statements, pipelined: each round trip carries every statement whose
// inputs are known by then (BEGIN and COMMIT included).
//
//	New-Order     2 round trips: BEGIN, district, customer and warehouse,
//	              item check | orders + new_order, order lines + stock,
//	              COMMIT (or ROLLBACK when an item does not exist)
//	Payment       1: BEGIN, the Payment statement, COMMIT
//	Order-Status  1: one read-only statement (autocommit)
//	Delivery      1: BEGIN, the Delivery statement, COMMIT
//	Stock-Level   1: one read-only statement (autocommit)
//
// Row locks come from the updates themselves (UPDATE ... RETURNING takes the
// district's next order number, the warehouse's and district's year-to-date
// amounts, the stock and the customer under their row locks), so the
// transactions stay correct at read committed.

func (w *Worker) sqlAttempt(t txnType) (abort bool, err error, inCommit bool) {
	s := &w.st
	switch t {
	case txNewOrder:
		return w.sqlNewOrder()
	case txPayment:
		w.setPayment()
		w.queue(s.begin)
		if w.pay.byName {
			w.queue(s.payByName)
		} else {
			w.queue(s.payByID)
		}
		w.queue(s.commit)
		if err := w.roundTrip(); err != nil {
			return false, err, true
		}
		return false, w.expectRows("payment", 1, 1), false
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
		w.setDelivery()
		w.queue(s.begin)
		w.queue(s.delivery)
		w.queue(s.commit)
		if err := w.roundTrip(); err != nil {
			return false, err, true
		}
		w.delivered = int(w.val(1, 0))
		return false, nil, false
	default:
		w.setStockLevel()
		w.queue(s.stockLevel)
		return false, w.roundTrip(), false
	}
}

func (w *Worker) sqlNewOrder() (abort bool, err error, inCommit bool) {
	s := &w.st
	in := &w.no
	w.setNewOrder()
	w.queue(s.begin)
	w.queue(s.noDistrict)
	w.queue(s.noCustomer)
	w.queue(s.noItems)
	if err := w.roundTrip(); err != nil {
		return false, err, false
	}
	if w.rows(1) != 1 || w.rows(2) != 1 {
		w.queue(s.rollback)
		if err := w.roundTrip(); err != nil {
			return false, err, false
		}
		return false, fmt.Errorf("new_order: warehouse %d district %d customer %d: %w", in.w, in.d, in.c, errUnexpected), false
	}
	if int(w.val(3, 0)) < in.n {
		// Item not found (clause 2.4.2.3): roll back.
		w.queue(s.rollback)
		return true, w.roundTrip(), false
	}
	w.setInt(pOID, int(w.val(1, 1)))
	w.queue(s.noOrder)
	w.queue(s.noLines)
	w.queue(s.commit)
	if err := w.roundTrip(); err != nil {
		return false, err, true
	}
	return false, nil, false
}

// expectRows checks that statement i of the last round trip returned n rows.
func (w *Worker) expectRows(op string, i, n int) error {
	if w.rows(i) != n {
		return fmt.Errorf("%s: %d rows instead of %d: %w", op, w.rows(i), n, errUnexpected)
	}
	return nil
}

// expectSomeRows checks that statement i of the last round trip returned
// rows.
func (w *Worker) expectSomeRows(op string, i int) error {
	if w.rows(i) == 0 {
		return fmt.Errorf("%s: no rows: %w", op, errUnexpected)
	}
	return nil
}

// The parameter values of each transaction, shared by both modes.

func (w *Worker) setNewOrder() {
	in := &w.no
	w.setInt(pW, in.w)
	w.setInt(pD, in.d)
	w.setInt(pC, in.c)
	w.setIntArray(pItems, in.items[:in.n])
	w.setIntArray(pSupply, in.supply[:in.n])
	w.setIntArray(pQty, in.qty[:in.n])
}

func (w *Worker) setPayment() {
	in := &w.pay
	w.setInt(pW, in.w)
	w.setInt(pD, in.d)
	w.setInt(pCW, in.cw)
	w.setInt(pCD, in.cd)
	w.setInt(pC, in.c)
	w.setLastName(in.byName, in.lastNum)
	w.setCents(pAmount, in.amount)
}

func (w *Worker) setOrderStatus() {
	in := &w.os
	w.setInt(pW, in.w)
	w.setInt(pD, in.d)
	w.setInt(pC, in.c)
	w.setLastName(in.byName, in.lastNum)
}

func (w *Worker) setDelivery() {
	w.setInt(pW, w.dl.w)
	w.setInt(pCarrier, w.dl.carrier)
}

func (w *Worker) setStockLevel() {
	w.setInt(pW, w.sl.w)
	w.setInt(pD, w.sl.d)
	w.setInt(pThreshold, w.sl.threshold)
}
