package tpcc

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// The distribution audits (clause 9.2.2.5 and 9.2.1.7, ranges as in
// TPC.md 1.3): counts of what the workers' completed transactions did,
// compared with the spec's ranges after the run. They prove that the inputs
// are drawn as the spec says (HammerDB's PostgreSQL functions, for
// instance, never take the by-name path and commit the 1% rollbacks).
//
// Each worker counts into its own shard (uncontended atomics on its own
// cache lines); Report sums the shards. Only completed transactions count
// (committed, or rolled back on purpose); retries count once. The counts
// cover the whole run, ramp-up included.

// counter indexes an audit count.
type counter uint8

const (
	cNewOrders         counter = iota // completed New-Orders (committed + rolled back)
	cRollbacks                        // New-Orders rolled back (item not found)
	cOrderLines                       // order lines of the completed New-Orders
	cRemoteLines                      // of which supplied by another warehouse
	cPayments                         // completed Payments
	cRemotePayments                   // of which for a customer of another warehouse
	cPaymentsByName                   // of which selecting the customer by last name
	cOrderStatus                      // completed Order-Status
	cOrderStatusByName                // of which by last name
	cDeliveries                       // completed Deliveries
	cSkippedDistricts                 // districts a Delivery found without undelivered orders
	cStockLevels                      // completed Stock-Levels
	numCounters
)

// auditShard is one worker's counts.
type auditShard struct {
	c [numCounters]atomic.Int64
	_ [64]byte
}

func (s *auditShard) add(c counter, n int64) {
	if s != nil {
		s.c[c].Add(n)
	}
}

// Audit collects the counts of all workers of a run. It is safe for
// concurrent use; the zero value is not: use NewAudit.
type Audit struct {
	mu         sync.Mutex
	shards     []*auditShard
	warehouses int
}

// NewAudit makes an empty audit for one run.
func NewAudit() *Audit { return &Audit{} }

// shard registers a worker of a run on a database of w warehouses.
func (a *Audit) shard(w int) *auditShard {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := &auditShard{}
	a.shards = append(a.shards, s)
	if w > a.warehouses {
		a.warehouses = w
	}
	return s
}

// AuditCounts are the summed counts of an Audit.
type AuditCounts struct {
	Workers           int   `json:"workers"`
	Warehouses        int   `json:"warehouses"`
	NewOrders         int64 `json:"new_orders"`
	Rollbacks         int64 `json:"rollbacks"`
	OrderLines        int64 `json:"order_lines"`
	RemoteLines       int64 `json:"remote_order_lines"`
	Payments          int64 `json:"payments"`
	RemotePayments    int64 `json:"remote_payments"`
	PaymentsByName    int64 `json:"payments_by_name"`
	OrderStatus       int64 `json:"order_status"`
	OrderStatusByName int64 `json:"order_status_by_name"`
	Deliveries        int64 `json:"deliveries"`
	SkippedDistricts  int64 `json:"skipped_districts"`
	StockLevels       int64 `json:"stock_levels"`
}

// Counts sums the workers' counts.
func (a *Audit) Counts() AuditCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	var sum [numCounters]int64
	for _, s := range a.shards {
		for i := range sum {
			sum[i] += s.c[i].Load()
		}
	}
	return AuditCounts{
		Workers: len(a.shards), Warehouses: a.warehouses,
		NewOrders: sum[cNewOrders], Rollbacks: sum[cRollbacks], OrderLines: sum[cOrderLines], RemoteLines: sum[cRemoteLines],
		Payments: sum[cPayments], RemotePayments: sum[cRemotePayments], PaymentsByName: sum[cPaymentsByName],
		OrderStatus: sum[cOrderStatus], OrderStatusByName: sum[cOrderStatusByName],
		Deliveries: sum[cDeliveries], SkippedDistricts: sum[cSkippedDistricts], StockLevels: sum[cStockLevels],
	}
}

// Report compares the counts with the spec's ranges.
func (a *Audit) Report() []AuditResult { return a.Counts().Report() }

// Audit statuses.
const (
	AuditPass          = "pass"
	AuditFail          = "fail"
	AuditTooFew        = "not enough samples"
	AuditNotApplicable = "not applicable"
)

// AuditResult is one audit: the measured Value against the spec's range
// [Min, Max]. Samples is the denominator; with fewer than MinSamples the
// audit is not significant and is reported as "not enough samples" with
// Passed true (it did not fail). Percentages are in 0..100.
type AuditResult struct {
	Name       string  `json:"name"`
	Clause     string  `json:"clause"`
	Value      float64 `json:"value"`
	Unit       string  `json:"unit"` // "%" or "lines"
	Min        float64 `json:"min"`
	Max        float64 `json:"max"`
	Samples    int64   `json:"samples"`
	MinSamples int64   `json:"min_samples"`
	Status     string  `json:"status"` // pass, fail, not enough samples, not applicable
	Passed     bool    `json:"passed"`
	Note       string  `json:"note,omitempty"`
}

// minSamplesRate is the significance gate of a proportion audit: the number
// of samples at which the range's half-width around the expected proportion
// p is three standard errors, so that a correct driver fails the audit
// only about 3 times in 1,000. (CockroachDB uses a flat 10,000
// transactions, with which the 1% rollback audit would fail a correct
// driver about a third of the time.)
func minSamplesRate(p, halfWidth float64) int64 {
	return int64(math.Ceil(9 * p * (1 - p) / (halfWidth * halfWidth)))
}

// Report compares the counts with the spec's ranges.
func (c AuditCounts) Report() []AuditResult {
	var out []AuditResult
	pct := func(num, den int64) float64 {
		if den == 0 {
			return 0
		}
		return 100 * float64(num) / float64(den)
	}
	remoteNA := ""
	if c.Warehouses == 1 {
		remoteNA = "a single warehouse has no remote warehouse"
	}
	// Clause 2.4.1.4, 9.2.2.5.1: 1% of New-Orders roll back.
	out = append(out, judge(AuditResult{Name: "new_order_rollback_pct", Clause: "2.4.1.4, 9.2.2.5.1", Unit: "%",
		Value: pct(c.Rollbacks, c.NewOrders), Min: 0.9, Max: 1.1, Samples: c.NewOrders,
		MinSamples: minSamplesRate(0.01, 0.001)}, ""))
	// Clause 2.4.1.3, 9.2.2.5.2: 5..15 lines, 10 on average. The variance
	// of a uniform 5..15 is 10; three standard errors within 0.5.
	items := 0.0
	if c.NewOrders > 0 {
		items = float64(c.OrderLines) / float64(c.NewOrders)
	}
	out = append(out, judge(AuditResult{Name: "items_per_order", Clause: "2.4.1.3, 9.2.2.5.2", Unit: "lines",
		Value: items, Min: 9.5, Max: 10.5, Samples: c.NewOrders, MinSamples: int64(math.Ceil(9 * 10 / 0.25))}, ""))
	// Clause 2.4.1.5, 9.2.2.5.3: 1% of order lines from a remote warehouse.
	out = append(out, judge(AuditResult{Name: "remote_order_lines_pct", Clause: "2.4.1.5, 9.2.2.5.3", Unit: "%",
		Value: pct(c.RemoteLines, c.OrderLines), Min: 0.95, Max: 1.05, Samples: c.OrderLines,
		MinSamples: minSamplesRate(0.01, 0.0005)}, remoteNA))
	// Clause 2.5.1.2, 9.2.2.5.4: 15% of Payments for a remote customer.
	out = append(out, judge(AuditResult{Name: "remote_payments_pct", Clause: "2.5.1.2, 9.2.2.5.4", Unit: "%",
		Value: pct(c.RemotePayments, c.Payments), Min: 14, Max: 16, Samples: c.Payments,
		MinSamples: minSamplesRate(0.15, 0.01)}, remoteNA))
	// Clause 2.5.1.2, 9.2.2.5.5 and 2.6.1.2, 9.2.2.5.6: 60% by last name.
	out = append(out, judge(AuditResult{Name: "payment_by_name_pct", Clause: "2.5.1.2, 9.2.2.5.5", Unit: "%",
		Value: pct(c.PaymentsByName, c.Payments), Min: 57, Max: 63, Samples: c.Payments,
		MinSamples: minSamplesRate(0.6, 0.03)}, ""))
	out = append(out, judge(AuditResult{Name: "order_status_by_name_pct", Clause: "2.6.1.2, 9.2.2.5.6", Unit: "%",
		Value: pct(c.OrderStatusByName, c.OrderStatus), Min: 57, Max: 63, Samples: c.OrderStatus,
		MinSamples: minSamplesRate(0.6, 0.03)}, ""))
	// Clause 5.2.3: minimum mix. The deck makes every whole pass exact; a
	// worker's unfinished pass can skew the shares by at most its 23 cards,
	// so the audit needs 40 passes per worker (then a Payment share of at
	// least 10*40/(23*40+10) = 43.0%).
	total := c.NewOrders + c.Payments + c.OrderStatus + c.Deliveries + c.StockLevels
	mixMin := int64(40 * DeckSize * max(c.Workers, 1))
	for _, m := range []struct {
		name     string
		n        int64
		min, max float64
	}{
		{"mix_new_order_pct", c.NewOrders, 0, 45},
		{"mix_payment_pct", c.Payments, 43, 100},
		{"mix_order_status_pct", c.OrderStatus, 4, 100},
		{"mix_delivery_pct", c.Deliveries, 4, 100},
		{"mix_stock_level_pct", c.StockLevels, 4, 100},
	} {
		r := AuditResult{Name: m.name, Clause: "5.2.3, 5.2.4.2", Unit: "%", Value: pct(m.n, total), Min: m.min, Max: m.max,
			Samples: total, MinSamples: mixMin}
		if m.name == "mix_new_order_pct" {
			r.Note = "the residual share: at most 45% when the others meet their minimums"
		}
		out = append(out, judge(r, ""))
	}
	// Clause 2.7.4.2, 9.2.1.7: skipped deliveries must not exceed 1%.
	out = append(out, judge(AuditResult{Name: "skipped_deliveries_pct", Clause: "2.7.4.2, 9.2.1.7", Unit: "%",
		Value: pct(c.SkippedDistricts, c.Deliveries*DistrictsPerWarehouse), Min: 0, Max: 1,
		Samples: c.Deliveries * DistrictsPerWarehouse, MinSamples: 100}, ""))
	return out
}

// judge sets Status, Passed and Note of r; na, if not empty, says why the
// audit does not apply.
func judge(r AuditResult, na string) AuditResult {
	switch {
	case na != "":
		r.Status, r.Passed, r.Note = AuditNotApplicable, true, na
	case r.Samples < r.MinSamples:
		r.Status, r.Passed = AuditTooFew, true
		r.Note = joinNote(r.Note, fmt.Sprintf("not enough samples: %d of the %d needed for a significant result", r.Samples, r.MinSamples))
	case r.Value < r.Min || r.Value > r.Max:
		r.Status, r.Passed = AuditFail, false
	default:
		r.Status, r.Passed = AuditPass, true
	}
	return r
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
