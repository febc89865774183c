package tpcc

// procsAttempt runs the drawn transaction as one call of its function (a
// stored procedure on MariaDB), in autocommit: the call is the transaction, one round trip. A call that
// writes (New-Order, Payment, Delivery) and loses its connection has an
// unknown outcome.
func (w *Worker) procsAttempt(t txnType) (abort bool, err error, inCommit bool) {
	s := &w.st
	switch t {
	case txNewOrder:
		if w.maria {
			// tpcc_new_order returns 0 when it rolled back for an unused
			// item (procs_mariadb.go).
			w.setMariaNewOrder()
			w.queue(s.procNO)
			if err := w.roundTrip(); err != nil {
				return false, err, true
			}
			if err := w.expectRows("new_order", 0, 1); err != nil {
				return false, err, false
			}
			return w.val(0, 0) == 0, nil, false
		}
		w.setNewOrder()
		w.queue(s.procNO)
		err := w.roundTrip()
		if _, code := w.sess.Classify(err, false, 1); err != nil && code == SQLStateItemNotFound {
			return true, nil, false
		}
		return false, err, true
	case txPayment:
		w.setPayment()
		w.queue(s.procPay)
		if err := w.roundTrip(); err != nil {
			return false, err, true
		}
		return false, w.expectRows("payment", 0, 1), false
	case txOrderStatus:
		w.setOrderStatus()
		w.queue(s.procOS)
		if err := w.roundTrip(); err != nil {
			return false, err, false
		}
		return false, w.expectSomeRows("order_status", 0), false
	case txDelivery:
		w.setDelivery()
		w.queue(s.procDelivery)
		if err := w.roundTrip(); err != nil {
			return false, err, true
		}
		w.delivered = int(w.val(0, 0))
		return false, nil, false
	default:
		w.setStockLevel()
		w.queue(s.procSL)
		return false, w.roundTrip(), false
	}
}
