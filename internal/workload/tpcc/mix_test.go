package tpcc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/workload"

	"github.com/tunebench/tunebench/internal/workload/gen"
)

func TestDeckExactPerPass(t *testing.T) {
	d := newDeck(rand.New(rand.NewPCG(1, 1)))
	const passes = 2000
	orders := map[[DeckSize]txnType]bool{}
	firstCard := [numTxnTypes]int{}
	for p := 0; p < passes; p++ {
		var n [numTxnTypes]int
		var order [DeckSize]txnType
		for i := 0; i < DeckSize; i++ {
			peek := d.peek()
			c := d.next()
			if c != peek {
				t.Fatalf("peek %v, next %v", peek, c)
			}
			n[c]++
			order[i] = c
		}
		if n != deckCards {
			t.Fatalf("pass %d dealt %v, want %v", p, n, deckCards)
		}
		orders[order] = true
		firstCard[order[0]]++
	}
	if len(orders) < passes*9/10 {
		t.Errorf("only %d different orders in %d passes: the deck is not shuffled per pass", len(orders), passes)
	}
	// The first card follows the deck's composition: 10/23 New-Order.
	if f := float64(firstCard[txNewOrder]) / passes; math.Abs(f-10.0/23) > 0.05 {
		t.Errorf("first card New-Order in %.3f of passes, want about %.3f", f, 10.0/23)
	}
}

func TestDeckSeeded(t *testing.T) {
	a, b := newDeck(gen.NewRand(5, 1)), newDeck(gen.NewRand(5, 1))
	c := newDeck(gen.NewRand(5, 2))
	same, diff := true, false
	for i := 0; i < 5*DeckSize; i++ {
		x, y, z := a.next(), b.next(), c.next()
		same = same && x == y
		diff = diff || x != z
	}
	if !same || !diff {
		t.Errorf("same seed same deck %v, other stream other deck %v", same, diff)
	}
}

func TestWarehouseAssignment(t *testing.T) {
	// Round-robin: vusers never share a home warehouse while W >= vusers.
	for _, w := range []int{1, 4, 10} {
		seen := map[int]bool{}
		for v := 0; v < w; v++ {
			h := HomeWarehouse(v, w)
			if h < 1 || h > w || seen[h] {
				t.Fatalf("W=%d vuser %d: home %d (seen %v)", w, v, h, seen)
			}
			seen[h] = true
		}
		if HomeWarehouse(w, w) != 1 {
			t.Errorf("W=%d: vuser %d does not wrap to warehouse 1", w, w)
		}
	}
	// --all-warehouses: the warehouses are dealt to the vusers, each once.
	for _, tc := range []struct{ vusers, w int }{{4, 10}, {3, 3}, {1, 5}, {8, 4}} {
		count := map[int]int{}
		for v := 0; v < tc.vusers; v++ {
			ws := DealtWarehouses(v, tc.vusers, tc.w)
			if len(ws) == 0 {
				t.Fatalf("%+v vuser %d: no warehouse", tc, v)
			}
			if v >= tc.w {
				if len(ws) != 1 || ws[0] != HomeWarehouse(v, tc.w) {
					t.Errorf("%+v vuser %d got none dealt: want its home warehouse, got %v", tc, v, ws)
				}
				continue
			}
			for _, x := range ws {
				count[x]++
			}
		}
		for x := 1; x <= tc.w; x++ {
			if count[x] != 1 {
				t.Errorf("%+v: warehouse %d dealt %d times", tc, x, count[x])
			}
		}
	}
	if got := DealtWarehouses(1, 4, 10); len(got) != 3 || got[0] != 2 || got[1] != 6 || got[2] != 10 {
		t.Errorf("DealtWarehouses(1, 4, 10) = %v, want [2 6 10]", got)
	}
	// Stock-Level districts spread over the districts.
	for v := 0; v < 4; v++ {
		if d := StockLevelDistrict(v, 4); d != v+1 {
			t.Errorf("W=4: Stock-Level district of vuser %d is %d, want %d", v, d, v+1)
		}
	}
	// Stock-Level districts of vusers sharing a warehouse differ.
	seen := map[int]bool{}
	for v := 0; v < 30; v += 3 { // W=3: vusers 0, 3, 6, ... share warehouse 1
		d := StockLevelDistrict(v, 3)
		if d < 1 || d > 10 || seen[d] {
			t.Fatalf("vuser %d: Stock-Level district %d (seen %v)", v, d, seen)
		}
		seen[d] = true
	}
}

func TestTerminalWarehousePick(t *testing.T) {
	o := RunOptions{Warehouses: 10, VUsers: 4, AllWarehouses: true}
	tm := newTerminal(o, 1, rand.New(rand.NewPCG(1, 2)))
	count := map[int]int{}
	for i := 0; i < 3000; i++ {
		count[tm.warehouse()]++
	}
	if len(count) != 3 || count[2] < 900 || count[6] < 900 || count[10] < 900 {
		t.Errorf("picks %v, want about 1000 each of 2, 6, 10", count)
	}
	o.AllWarehouses = false
	tm = newTerminal(o, 5, rand.New(rand.NewPCG(1, 2)))
	for i := 0; i < 10; i++ {
		if w := tm.warehouse(); w != 6 {
			t.Fatalf("home warehouse of vuser 5: %d, want 6", w)
		}
	}
	// otherWarehouse is uniform over the others.
	count = map[int]int{}
	for i := 0; i < 9000; i++ {
		count[tm.otherWarehouse(6)]++
	}
	if count[6] != 0 || len(count) != 9 {
		t.Errorf("other warehouses of 6: %v", count)
	}
	for x, n := range count {
		if n < 850 || n > 1150 {
			t.Errorf("warehouse %d picked %d times of 9000 (want about 1000)", x, n)
		}
	}
}

// within checks a proportion against its expectation with 4.5 standard
// errors (the seeds are fixed, so the test is deterministic).
func within(t *testing.T, name string, k, n int, p float64) {
	t.Helper()
	got := float64(k) / float64(n)
	if se := math.Sqrt(p * (1 - p) / float64(n)); math.Abs(got-p) > 4.5*se {
		t.Errorf("%s: %.4f%% (%d of %d), want %.4f%% +- %.4f", name, 100*got, k, n, 100*p, 100*4.5*se)
	}
}

func TestNewOrderInputs(t *testing.T) {
	c := Constants{CLast: 100, CCustID: 200, CItemID: 3000}
	tm := newTerminal(RunOptions{Warehouses: 10, VUsers: 1, Constants: c}, 0, rand.New(rand.NewPCG(7, 7)))
	const draws = 200000
	var in newOrderInput
	rollbacks, lines, remote, linesTotal := 0, 0, 0, 0
	cnt := map[int]int{}
	for i := 0; i < draws; i++ {
		tm.drawNewOrder(&in, 3)
		if in.w != 3 || in.d < 1 || in.d > 10 || in.c < 1 || in.c > CustomersPerDistrict {
			t.Fatalf("input %+v", in)
		}
		if in.n < MinOrderLines || in.n > MaxOrderLines {
			t.Fatalf("ol_cnt %d", in.n)
		}
		cnt[in.n]++
		r := 0
		for j := 0; j < in.n; j++ {
			if j > 0 && in.items[j] <= in.items[j-1] {
				t.Fatalf("items not sorted and unique: %v", in.items[:in.n])
			}
			if in.qty[j] < 1 || in.qty[j] > 10 {
				t.Fatalf("quantity %d", in.qty[j])
			}
			item := in.items[j]
			if item == UnusedItemID {
				if !in.rollback || j != in.n-1 {
					t.Fatalf("unused item on line %d of %d (rollback %v)", j, in.n, in.rollback)
				}
			} else if item < 1 || item > Items {
				t.Fatalf("item %d", item)
			}
			if in.supply[j] != 3 {
				r++
				if in.supply[j] < 1 || in.supply[j] > 10 {
					t.Fatalf("supply warehouse %d", in.supply[j])
				}
			}
		}
		if in.rollback && in.items[in.n-1] != UnusedItemID {
			t.Fatal("rollback without the unused item on the last line")
		}
		if r != in.remote {
			t.Fatalf("remote %d, counted %d", in.remote, r)
		}
		if in.rollback {
			rollbacks++
		}
		lines += in.n
		remote += in.remote
		linesTotal += in.n
	}
	within(t, "rollbacks", rollbacks, draws, 0.01)
	within(t, "remote lines", remote, lines, 0.01)
	if mean := float64(linesTotal) / draws; math.Abs(mean-10) > 0.05 {
		t.Errorf("mean ol_cnt %.3f, want 10", mean)
	}
	for n := MinOrderLines; n <= MaxOrderLines; n++ {
		within(t, "ol_cnt", cnt[n], draws, 1.0/11)
	}
	// One warehouse: never remote.
	tm1 := newTerminal(RunOptions{Warehouses: 1, VUsers: 1, Constants: c}, 0, rand.New(rand.NewPCG(7, 8)))
	for i := 0; i < 5000; i++ {
		tm1.drawNewOrder(&in, 1)
		if in.remote != 0 {
			t.Fatal("remote line with one warehouse")
		}
	}
}

func TestPaymentAndOrderStatusInputs(t *testing.T) {
	c := Constants{CLast: 100, CCustID: 200, CItemID: 3000}
	tm := newTerminal(RunOptions{Warehouses: 5, VUsers: 1, Constants: c}, 0, rand.New(rand.NewPCG(9, 9)))
	const draws = 200000
	var p paymentInput
	remote, byName := 0, 0
	var amount float64
	for i := 0; i < draws; i++ {
		tm.drawPayment(&p, 2)
		if p.w != 2 || p.d < 1 || p.d > 10 || p.amount < 100 || p.amount > 500000 {
			t.Fatalf("input %+v", p)
		}
		if p.remote {
			remote++
			if p.cw == 2 || p.cw < 1 || p.cw > 5 || p.cd < 1 || p.cd > 10 {
				t.Fatalf("remote payment %+v", p)
			}
		} else if p.cw != 2 || p.cd != p.d {
			t.Fatalf("home payment %+v", p)
		}
		if p.byName {
			byName++
			if p.lastNum < 0 || p.lastNum > 999 {
				t.Fatalf("last name number %d", p.lastNum)
			}
		} else if p.c < 1 || p.c > CustomersPerDistrict {
			t.Fatalf("customer %d", p.c)
		}
		amount += float64(p.amount)
	}
	within(t, "remote payments", remote, draws, 0.15)
	within(t, "payments by name", byName, draws, 0.60)
	if mean := amount / draws / 100; math.Abs(mean-2500.5) > 15 {
		t.Errorf("mean amount %.2f, want 2500.50", mean)
	}
	var os orderStatusInput
	byName = 0
	for i := 0; i < draws; i++ {
		tm.drawOrderStatus(&os, 4)
		if os.w != 4 || os.d < 1 || os.d > 10 {
			t.Fatalf("input %+v", os)
		}
		if os.byName {
			byName++
		}
	}
	within(t, "order-status by name", byName, draws, 0.60)
	var dl deliveryInput
	var sl stockLevelInput
	carriers, thresholds := map[int]bool{}, map[int]bool{}
	for i := 0; i < 2000; i++ {
		tm.drawDelivery(&dl, 1)
		tm.drawStockLevel(&sl, 1)
		if dl.carrier < 1 || dl.carrier > 10 || sl.threshold < 10 || sl.threshold > 20 || sl.d != tm.slDistrict {
			t.Fatalf("delivery %+v stock-level %+v", dl, sl)
		}
		carriers[dl.carrier] = true
		thresholds[sl.threshold] = true
	}
	if len(carriers) != 10 || len(thresholds) != 11 {
		t.Errorf("carriers %v thresholds %v", carriers, thresholds)
	}
	// One warehouse: every Payment is home.
	tm1 := newTerminal(RunOptions{Warehouses: 1, VUsers: 1, Constants: c}, 0, rand.New(rand.NewPCG(1, 3)))
	for i := 0; i < 5000; i++ {
		tm1.drawPayment(&p, 1)
		if p.remote || p.cw != 1 {
			t.Fatal("remote payment with one warehouse")
		}
	}
}

func TestRenderTemplates(t *testing.T) {
	sql, ps := positional("a = {w} AND b = {d} AND c = {w} AND {items}")
	if sql != "a = $1 AND b = $2 AND c = $1 AND $3" || len(ps) != 3 || ps[0] != pW || ps[1] != pD || ps[2] != pItems {
		t.Errorf("positional: %q %v", sql, ps)
	}
	if got := plpgsql("{w} {o_id} {c_last}"); got != "p_w v_o_id p_c_last" {
		t.Errorf("plpgsql: %q", got)
	}
	// Every template renders (no unknown placeholder) and keeps no '{'.
	for _, tmpl := range []string{noDistrict, noCustomer, noItems, noOrder, noLines, paymentByID, paymentByName,
		orderStatusByID, orderStatusByName, deliverySQL("READ COMMITTED"), deliverySQL("SERIALIZABLE"), stockLevelTmpl, procNewOrder, procPayment, procOrderStatus,
		procDelivery, procStockLevel} {
		s := newStmt("x", tmpl)
		for _, c := range s.sql {
			if c == '{' || c == '%' {
				t.Errorf("unrendered placeholder in %s", s.sql)
				break
			}
		}
	}
	for _, ddl := range procDDL() {
		if len(ddl) == 0 {
			t.Fatal("empty DDL")
		}
	}
}

// recordSession keeps what a worker sets in its session's slots.
type recordSession struct {
	target.Session
	text  map[int]string
	null  map[int]bool
	ints  map[int]int64
	array map[int][]int32
}

func (r *recordSession) SetText(slot int, b []byte) { r.text[slot], r.null[slot] = string(b), false }
func (r *recordSession) SetNull(slot int)           { r.null[slot] = true }
func (r *recordSession) SetInt(slot int, v int64)   { r.ints[slot] = v }
func (r *recordSession) SetIntArray(slot int, vs []int32) {
	r.array[slot] = append([]int32(nil), vs...)
}

// TestParamValues: amounts go as numeric text, a customer by id has a NULL
// last name, by name the name of its number (the session encodes them).
func TestParamValues(t *testing.T) {
	rs := &recordSession{text: map[int]string{}, null: map[int]bool{}, ints: map[int]int64{}, array: map[int][]int32{}}
	w := &Worker{sess: rs}
	for cents, want := range map[int]string{100: "1.00", 500000: "5000.00", 123405: "1234.05", 7: "0.07"} {
		w.setCents(pAmount, cents)
		if rs.text[int(pAmount)] != want {
			t.Errorf("%d cents: %q, want %q", cents, rs.text[int(pAmount)], want)
		}
	}
	w.setLastName(false, 5)
	if !rs.null[int(pCLast)] {
		t.Error("by id: c_last not NULL")
	}
	w.setLastName(true, 371)
	if rs.null[int(pCLast)] || rs.text[int(pCLast)] != "PRICALLYOUGHT" {
		t.Errorf("c_last %q", rs.text[int(pCLast)])
	}
	w.setIntArray(pItems, []int32{7, 100001})
	if a := rs.array[int(pItems)]; len(a) != 2 || a[0] != 7 || a[1] != 100001 {
		t.Errorf("items %v", a)
	}
	// Every parameter has a slot of its kind's type.
	w.buildStmts()
	spec := w.sessionSpec()
	for p, d := range paramDefs {
		if spec.Slots[p] != slotTypes[d.kind] {
			t.Errorf("param %s: slot type %d", d.name, spec.Slots[p])
		}
	}
	for i, st := range spec.Stmts {
		if w.prepared[i].idx != i || st.Name != w.prepared[i].name || len(st.Params) != len(w.prepared[i].params) {
			t.Errorf("statement %d: %+v", i, st)
		}
	}
}

// TestShardTerminals: the shards of a split run take the terminals the
// whole run would give its virtual users (home warehouse, Stock-Level
// district, the warehouses dealt with --all-warehouses): every one once,
// none driven by two shards.
func TestShardTerminals(t *testing.T) {
	const vusers, w = 10, 4
	type term struct {
		home, sl int
		own      string
	}
	whole := map[term]int{}
	for v := 0; v < vusers; v++ {
		tm := newTerminal(RunOptions{Warehouses: w, VUsers: vusers, AllWarehouses: true}, v, nil)
		whole[term{tm.home, tm.slDistrict, fmt.Sprint(tm.own)}]++
	}
	for _, n := range []int{2, 3, 4} {
		got := map[term]int{}
		for i := 0; i < n; i++ {
			sh := workload.Shard{Index: i, Count: n}
			mine := int(sh.Share(vusers))
			o := RunOptions{Warehouses: w, VUsers: mine, AllWarehouses: true, FirstVUser: int(sh.Offset(vusers)), AllVUsers: vusers}
			for v := 0; v < mine; v++ {
				tm := newTerminal(o, v, nil)
				got[term{tm.home, tm.slDistrict, fmt.Sprint(tm.own)}]++
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(whole) {
			t.Errorf("%d shards drive %v, the whole run %v", n, got, whole)
		}
	}
}
