// Package tpcc is the TPC-C-like OLTP workload in the style of HammerDB's
// TPROC-C: the nine tables, the five transactions (New-Order, Payment,
// Order-Status, Delivery, Stock-Level) with the standard mix, NOPM and TPM,
// in a server-side PL/pgSQL mode ("procs") and a client-side SQL mode ("sql").
// The facts it follows are in the TPC-C specification (clauses are cited
// inline); results are "TPC-C-like", never TPC-C results.
package tpcc

// Population sizes per warehouse (clause 1.2.1, 4.3.3.1).
const (
	DistrictsPerWarehouse = 10
	CustomersPerDistrict  = 3000
	OrdersPerDistrict     = 3000
	NewOrdersPerDistrict  = 900                                          // the last 900 orders of each district are undelivered
	FirstUndelivered      = OrdersPerDistrict - NewOrdersPerDistrict + 1 // 2101
	Items                 = 100000
	StockPerWarehouse     = Items
	MinOrderLines         = 5
	MaxOrderLines         = 15
)

// Transaction (operation) names as stored with results.
const (
	OpNewOrder    = "new_order"
	OpPayment     = "payment"
	OpOrderStatus = "order_status"
	OpDelivery    = "delivery"
	OpStockLevel  = "stock_level"
)

// Ops lists the operations in display order.
func Ops() []string {
	return []string{OpNewOrder, OpPayment, OpOrderStatus, OpDelivery, OpStockLevel}
}
