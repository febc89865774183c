package tpcc

import (
	"sync"
	"testing"
)

// goodCounts are the counts of a long, correct run: every audit passes.
func goodCounts() AuditCounts {
	const passes = 50000 // per worker, 4 workers
	no := int64(4 * passes * 10)
	return AuditCounts{
		Workers: 4, Warehouses: 4,
		NewOrders: no, Rollbacks: no / 100, OrderLines: no * 10, RemoteLines: no * 10 / 100,
		Payments: no, RemotePayments: no * 15 / 100, PaymentsByName: no * 60 / 100,
		OrderStatus: no / 10, OrderStatusByName: no / 10 * 60 / 100,
		Deliveries: no / 10, SkippedDistricts: 0, StockLevels: no / 10,
	}
}

func byName(rs []AuditResult) map[string]AuditResult {
	m := map[string]AuditResult{}
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

func TestAuditAllPass(t *testing.T) {
	rs := goodCounts().Report()
	if len(rs) != 12 {
		t.Fatalf("%d audits, want 12", len(rs))
	}
	for _, r := range rs {
		if !r.Passed || r.Status != AuditPass {
			t.Errorf("%s: %s (value %.3f, range %g..%g, samples %d of %d) %s", r.Name, r.Status, r.Value, r.Min, r.Max, r.Samples, r.MinSamples, r.Note)
		}
	}
}

// TestAuditEachFails breaks one count at a time: exactly that audit fails,
// and the same audit passes just inside its range.
func TestAuditEachFails(t *testing.T) {
	cases := []struct {
		audit      string
		fail, pass func(*AuditCounts)
	}{
		{"new_order_rollback_pct",
			func(c *AuditCounts) { c.Rollbacks = c.NewOrders * 12 / 1000 },    // 1.2%
			func(c *AuditCounts) { c.Rollbacks = c.NewOrders * 105 / 10000 }}, // 1.05%
		{"new_order_rollback_pct",
			func(c *AuditCounts) { c.Rollbacks = 0 }, // HammerDB: the rollbacks commit
			func(c *AuditCounts) { c.Rollbacks = c.NewOrders * 95 / 10000 }},
		{"items_per_order",
			func(c *AuditCounts) { c.OrderLines = c.NewOrders * 94 / 10 },
			func(c *AuditCounts) { c.OrderLines = c.NewOrders * 96 / 10 }},
		{"remote_order_lines_pct",
			func(c *AuditCounts) { c.RemoteLines = c.OrderLines * 106 / 10000 },
			func(c *AuditCounts) { c.RemoteLines = c.OrderLines * 104 / 10000 }},
		{"remote_payments_pct",
			func(c *AuditCounts) { c.RemotePayments = c.Payments * 13 / 100 },
			func(c *AuditCounts) { c.RemotePayments = c.Payments * 145 / 1000 }},
		{"payment_by_name_pct",
			func(c *AuditCounts) { c.PaymentsByName = 0 }, // HammerDB: the by-name path never matches
			func(c *AuditCounts) { c.PaymentsByName = c.Payments * 62 / 100 }},
		{"order_status_by_name_pct",
			func(c *AuditCounts) { c.OrderStatusByName = c.OrderStatus * 64 / 100 },
			func(c *AuditCounts) { c.OrderStatusByName = c.OrderStatus * 58 / 100 }},
		{"mix_new_order_pct",
			func(c *AuditCounts) { c.NewOrders = c.Payments * 13 / 10; c.Rollbacks = c.NewOrders / 100 },
			func(c *AuditCounts) { c.NewOrders = c.Payments * 102 / 100; c.Rollbacks = c.NewOrders / 100 }},
		{"mix_payment_pct",
			func(c *AuditCounts) { c.Payments = c.NewOrders * 70 / 100 },
			func(c *AuditCounts) { c.Payments = c.NewOrders * 99 / 100 }},
		{"mix_order_status_pct",
			func(c *AuditCounts) { c.OrderStatus = c.NewOrders / 40; c.OrderStatusByName = c.OrderStatus * 6 / 10 },
			func(c *AuditCounts) { c.OrderStatus = c.NewOrders / 9; c.OrderStatusByName = c.OrderStatus * 6 / 10 }},
		{"mix_delivery_pct",
			func(c *AuditCounts) { c.Deliveries = c.NewOrders / 40 },
			func(c *AuditCounts) { c.Deliveries = c.NewOrders / 9 }},
		{"mix_stock_level_pct",
			func(c *AuditCounts) { c.StockLevels = c.NewOrders / 40 },
			func(c *AuditCounts) { c.StockLevels = c.NewOrders / 9 }},
		{"skipped_deliveries_pct",
			func(c *AuditCounts) { c.SkippedDistricts = c.Deliveries * 10 * 2 / 100 },
			func(c *AuditCounts) { c.SkippedDistricts = c.Deliveries * 10 / 100 }},
	}
	for _, tc := range cases {
		for _, pass := range []bool{false, true} {
			c := goodCounts()
			if pass {
				tc.pass(&c)
			} else {
				tc.fail(&c)
			}
			for _, r := range c.Report() {
				// Changing one count may move the mix shares a little;
				// only the audit under test is judged here, plus the
				// others must not fail when that count is inside its range.
				if r.Name == tc.audit {
					if r.Passed != pass || (pass && r.Status != AuditPass) || (!pass && r.Status != AuditFail) {
						t.Errorf("%s (pass case %v): %s, value %.4f", tc.audit, pass, r.Status, r.Value)
					}
				} else if !r.Passed && pass {
					t.Errorf("%s pass case: %s failed too (value %.4f)", tc.audit, r.Name, r.Value)
				}
			}
		}
	}
}

func TestAuditSignificanceGate(t *testing.T) {
	// A short run with a bad rollback rate: not enough samples, not a failure.
	c := AuditCounts{Workers: 1, Warehouses: 2, NewOrders: 1000, Rollbacks: 30, OrderLines: 10000, RemoteLines: 300,
		Payments: 1000, RemotePayments: 100, PaymentsByName: 200, OrderStatus: 100, OrderStatusByName: 10,
		Deliveries: 5, SkippedDistricts: 5, StockLevels: 100}
	rs := byName(c.Report())
	for _, name := range []string{"new_order_rollback_pct", "remote_order_lines_pct", "remote_payments_pct",
		"payment_by_name_pct", "order_status_by_name_pct", "skipped_deliveries_pct"} {
		r := rs[name]
		if !r.Passed || r.Status != AuditTooFew || r.Note == "" {
			t.Errorf("%s: %s passed %v note %q; want not enough samples", name, r.Status, r.Passed, r.Note)
		}
	}
	// Items per order needs 360 New-Orders: 1000 is enough, and 7.0 fails.
	c.OrderLines = 7000
	if r := byName(c.Report())["items_per_order"]; r.Status != AuditFail {
		t.Errorf("items_per_order with 1000 orders of 7 lines: %s", r.Status)
	}
	// The mix gate grows with the workers: 40 passes each.
	c = goodCounts()
	c.Workers = 100000
	if r := byName(c.Report())["mix_payment_pct"]; r.Status != AuditTooFew {
		t.Errorf("mix with too few passes per worker: %s", r.Status)
	}
	// The gates themselves.
	if n := minSamplesRate(0.01, 0.001); n != 89100 {
		t.Errorf("rollback gate %d, want 89100", n)
	}
	if n := minSamplesRate(0.6, 0.03); n != 2400 {
		t.Errorf("by-name gate %d, want 2400", n)
	}
	// No samples at all.
	for _, r := range (AuditCounts{}).Report() {
		if !r.Passed || r.Status != AuditTooFew {
			t.Errorf("%s with no samples: %s", r.Name, r.Status)
		}
	}
}

func TestAuditSingleWarehouse(t *testing.T) {
	c := goodCounts()
	c.Warehouses, c.RemoteLines, c.RemotePayments = 1, 0, 0
	rs := byName(c.Report())
	for _, name := range []string{"remote_order_lines_pct", "remote_payments_pct"} {
		if r := rs[name]; r.Status != AuditNotApplicable || !r.Passed {
			t.Errorf("%s with one warehouse: %s", name, r.Status)
		}
	}
}

func TestAuditShardsConcurrent(t *testing.T) {
	a := NewAudit()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		s := a.shard(3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				s.add(cNewOrders, 1)
				s.add(cOrderLines, 10)
			}
		}()
	}
	wg.Wait()
	c := a.Counts()
	if c.Workers != 8 || c.Warehouses != 3 || c.NewOrders != 8000 || c.OrderLines != 80000 {
		t.Errorf("counts %+v", c)
	}
	var nilAudit *Audit
	nilAudit.shard(1).add(cNewOrders, 1) // a nil audit counts nothing and does not crash
}
