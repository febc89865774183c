package tpcc

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/errs"
)

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func qInt(t testing.TB, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func qExec(t testing.TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// mustPassAll runs all twelve conditions and fails the test on a violation.
func mustPassAll(t testing.TB, conn *pgx.Conn) CheckReport {
	t.Helper()
	rep, err := Check(ctxT(t, 2*time.Minute), conn, CheckOptions{All: true})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(rep.Conditions) != 12 {
		t.Fatalf("Check ran %d conditions, want 12", len(rep.Conditions))
	}
	for _, c := range rep.Conditions {
		if !c.Passed {
			t.Errorf("condition %d (%s) failed: %d %s, e.g. %v %s", c.Number, c.Name, c.Violations, c.Unit, c.Examples, c.Error)
		}
	}
	if !rep.Passed {
		t.FailNow()
	}
	return rep
}

// wantRows are the exact row counts of a load of w warehouses except
// order_line (5 to 15 lines per order: checked against sum(o_ol_cnt)).
func wantRows(w int64) map[string]int64 {
	return map[string]int64{
		"warehouse": w, "district": 10 * w, "customer": 30000 * w, "history": 30000 * w,
		"orders": 30000 * w, "new_order": 9000 * w, "item": 100000, "stock": 100000 * w,
	}
}

func checkRowCounts(t *testing.T, conn *pgx.Conn, w int64, st *LoadStats) {
	t.Helper()
	for table, want := range wantRows(w) {
		if n := qInt(t, conn, "select count(*) from "+table); n != want {
			t.Errorf("%s has %d rows, want %d", table, n, want)
		}
		if st != nil && st.TableRows[table] != want {
			t.Errorf("stats: %s %d rows, want %d", table, st.TableRows[table], want)
		}
	}
	ol := qInt(t, conn, "select count(*) from order_line")
	if sum := qInt(t, conn, "select sum(o_ol_cnt) from orders"); ol != sum {
		t.Errorf("order_line has %d rows, sum(o_ol_cnt) = %d", ol, sum)
	}
	if ol < 5*30000*w || ol > 15*30000*w {
		t.Errorf("order_line has %d rows, outside 5..15 per order", ol)
	}
	if st != nil {
		var total int64
		for _, n := range st.TableRows {
			total += n
		}
		if st.TableRows["order_line"] != ol || st.Rows != total {
			t.Errorf("stats: order_line %d (table has %d), rows %d (tables sum to %d)", st.TableRows["order_line"], ol, st.Rows, total)
		}
	}
}

// TestLoadPopulation checks a W=2 load against the population rules of
// clause 4.3.3.1 and all twelve consistency conditions.
func TestLoadPopulation(t *testing.T) {
	t.Parallel()
	db := loadedDB(t, 2)
	conn := testConn(t, db)
	ctx := ctxT(t, 3*time.Minute)
	mustPassAll(t, conn)
	checkRowCounts(t, conn, 2, nil)

	info, err := ReadInfo(ctx, conn)
	if err != nil {
		t.Fatalf("ReadInfo: %v", err)
	}
	if info.Warehouses != 2 || info.Status != StatusComplete || info.Partitioned || info.Seed != templateSeed || info.Format != FormatBinary || info.LoadedAt.IsZero() {
		t.Errorf("ReadInfo = %+v", info)
	}
	if want := NewConstants(constantsRand(templateSeed)); info.Load != want {
		t.Errorf("load constants %+v, want %+v (drawn from the seed)", info.Load, want)
	}
	// A run can always draw a valid C-Run for this C-Load.
	if rc := NewRunConstants(rand.New(rand.NewPCG(1, 2)), info.Load); !ValidLastDelta(info.Load.CLast, rc.CLast) {
		t.Errorf("run constant %d invalid for load %d", rc.CLast, info.Load.CLast)
	}

	// Every rule is a count of rows that break it; all must be 0.
	for _, q := range []struct{ what, sql string }{
		{"items outside the ranges", `select count(*) from item where i_im_id not between 1 and 10000 or i_price not between 1.00 and 100.00
			or length(i_name) not between 14 and 24 or length(i_data) not between 26 and 50`},
		{"warehouses not as loaded", `select count(*) from warehouse where w_ytd <> 300000.00 or w_tax not between 0 and 0.2
			or length(w_name) not between 6 and 10 or w_zip !~ '^[0-9]{4}11111$' or w_state !~ '^[A-Z]{2}$'`},
		{"districts not as loaded", `select count(*) from district where d_ytd <> 30000.00 or d_next_o_id <> 3001 or d_tax not between 0 and 0.2`},
		{"customers not as loaded", `select count(*) from customer where c_middle <> 'OE' or c_credit not in ('GC', 'BC')
			or c_credit_lim <> 50000.00 or c_discount not between 0 and 0.5 or c_balance <> -10.00 or c_ytd_payment <> 10.00
			or c_payment_cnt <> 1 or c_delivery_cnt <> 0 or length(c_data) not between 300 and 500 or length(c_first) not between 8 and 16
			or c_phone !~ '^[0-9]{16}$' or c_since is null`},
		{"history rows not 10.00 per customer", `select count(*) from customer c left join history h
			on (h.h_c_w_id, h.h_c_d_id, h.h_c_id, h.h_w_id, h.h_d_id) = (c.c_w_id, c.c_d_id, c.c_id, c.c_w_id, c.c_d_id)
			where h.h_amount is distinct from 10.00 or length(h.h_data) not between 12 and 24`},
		{"stock rows not as loaded", `select count(*) from stock where s_quantity not between 10 and 100 or s_ytd <> 0 or s_order_cnt <> 0
			or s_remote_cnt <> 0 or length(s_dist_01) <> 24 or length(s_dist_10) <> 24 or length(s_data) not between 26 and 50`},
		{"districts whose O_C_ID is not a permutation of 1..3000", `select count(*) from (select o_w_id, o_d_id from orders group by 1, 2
			having count(distinct o_c_id) <> 3000 or min(o_c_id) <> 1 or max(o_c_id) <> 3000) x`},
		{"orders with a wrong carrier or line count", `select count(*) from orders where o_ol_cnt not between 5 and 15 or o_all_local <> 1
			or (o_id < 2101 and o_carrier_id not between 1 and 10) or (o_id >= 2101 and o_carrier_id is not null)`},
		{"districts without exactly new orders 2101..3000", `select 20 - count(*) from (select 1 from new_order group by no_w_id, no_d_id
			having count(*) = 900 and min(no_o_id) = 2101 and max(no_o_id) = 3000) x`},
		{"order lines not as loaded", `select count(*) from order_line ol join orders o on (o.o_w_id, o.o_d_id, o.o_id) = (ol.ol_w_id, ol.ol_d_id, ol.ol_o_id)
			where ol.ol_quantity <> 5 or ol.ol_supply_w_id <> ol.ol_w_id or ol.ol_i_id not between 1 and 100000 or length(ol.ol_dist_info) <> 24
			or (o.o_id < 2101 and (ol.ol_amount <> 0 or ol.ol_delivery_d is distinct from o.o_entry_d))
			or (o.o_id >= 2101 and (ol.ol_amount not between 0.01 and 9999.99 or ol.ol_delivery_d is not null))`},
		{"money columns that are not numeric", `select count(*) from information_schema.columns where table_schema = current_schema()
			and column_name in ('w_ytd', 'd_ytd', 'c_balance', 'c_ytd_payment', 'c_credit_lim', 'h_amount', 'ol_amount', 'i_price', 'w_tax', 'd_tax', 'c_discount')
			and data_type <> 'numeric'`},
		{"tables never analyzed", `select count(*) from pg_class c where relname = any('{warehouse,district,customer,history,new_order,orders,order_line,item,stock}')
			and not exists (select 1 from pg_statistic s where s.starelid = c.oid)`},
		{"tables with autovacuum still off", `select count(*) from pg_class where relname = any('{warehouse,district,customer,history,new_order,orders,order_line,item,stock}') and reloptions is not null`},
		// COPY FREEZE leaves every page all-visible (ANALYZE copies the
		// visibility map count into relallvisible): no VACUUM needed.
		{"big tables not all-visible after COPY FREEZE", `select count(*) from pg_class where relname in ('stock', 'order_line', 'customer') and relallvisible < relpages`},
	} {
		if n := qInt(t, conn, q.sql); n != 0 {
			t.Errorf("%s: %d", q.what, n)
		}
	}
	if n := qInt(t, conn, "select count(*) from pg_class where relname = any($1) and relkind = 'i'", keyNames()); n != int64(len(Keys)) {
		t.Errorf("%d of the %d keys and indexes exist", n, len(Keys))
	}

	// The first 1,000 customers of each district get the names of 0..999 in
	// order; the others a name from NURand(255, 0, 999).
	rows, err := conn.Query(ctx, "select c_id, c_last from customer order by c_w_id, c_d_id, c_id")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for i := 0; i < 1000; i++ {
		names[LastName(i)] = true
	}
	var bad, firstBad int
	for rows.Next() {
		var id int
		var last string
		if err := rows.Scan(&id, &last); err != nil {
			t.Fatal(err)
		}
		if (id <= 1000 && last != LastName(id-1)) || !names[last] {
			bad++
			if bad == 1 {
				firstBad = id
			}
		}
	}
	if rows.Err() != nil || bad > 0 {
		t.Errorf("%d customers have a wrong last name (first c_id %d) %v", bad, firstBad, rows.Err())
	}

	// About 10%: ORIGINAL in I_DATA and S_DATA, bad credit. Binomial
	// standard deviations are 0.1% (items, stock) and 0.12% (customers).
	for _, q := range []struct {
		what     string
		sql      string
		min, max float64
	}{
		{"items with ORIGINAL", "select avg((i_data like '%ORIGINAL%')::int)::float8 from item", 0.095, 0.105},
		{"stock with ORIGINAL", "select avg((s_data like '%ORIGINAL%')::int)::float8 from stock", 0.095, 0.105},
		{"customers with BC credit", "select avg((c_credit = 'BC')::int)::float8 from customer", 0.094, 0.106},
		{"average O_OL_CNT", "select avg(o_ol_cnt)::float8 from orders", 9.9, 10.1},
	} {
		var v float64
		if err := conn.QueryRow(ctx, q.sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
		if v < q.min || v > q.max {
			t.Errorf("%s: %.4f, want %.3f..%.3f", q.what, v, q.min, q.max)
		}
	}
}

func keyNames() []string {
	var out []string
	for _, k := range keySteps() {
		out = append(out, k.Name)
	}
	return out
}

// TestLoadRefusesExisting: a second load without --drop is refused with
// the fix named; the tables are untouched.
func TestLoadRefusesExisting(t *testing.T) {
	t.Parallel()
	db := loadedDB(t, 2)
	conn := testConn(t, db)
	ctx := ctxT(t, time.Minute)
	_, err := Load(ctx, testConnector(t, db), LoadOptions{Warehouses: 1, Workers: 1}, nil)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--drop") {
		t.Fatalf("second load: %v (hint %q), want a usage error naming --drop", err, errs.HintOf(err))
	}
	if n := qInt(t, conn, "select count(*) from warehouse"); n != 2 {
		t.Errorf("refused load changed the data: %d warehouses", n)
	}
	// Resume of a complete load has nothing to do.
	st, err := Load(ctx, testConnector(t, db), LoadOptions{Resume: true}, nil)
	if err != nil || !st.Complete || st.Warehouses != 2 {
		t.Errorf("resume of a complete load: %+v, %v", st, err)
	}
	// Options are checked before connecting.
	for _, o := range []LoadOptions{{}, {Warehouses: -1}, {Warehouses: 1, Workers: -1}, {Warehouses: 1, Resume: true, Drop: true}, {Warehouses: 1, Format: "csv"}} {
		if _, err := Load(ctx, nil, o, nil); errs.KindOf(err) != errs.KindUsage {
			t.Errorf("options %+v: %v, want a usage error", o, err)
		}
	}
}

// TestLoadPartitionedDrop replaces a loaded database (--drop) with a
// partitioned load and checks the partitions and the conditions.
func TestLoadPartitionedDrop(t *testing.T) {
	t.Parallel()
	db := loadedDB(t, 2)
	conn := testConn(t, db)
	ctx := ctxT(t, 3*time.Minute)
	var mu sync.Mutex
	phases := map[string]bool{}
	var last LoadProgress
	st, err := Load(ctx, testConnector(t, db), LoadOptions{Warehouses: 2, Workers: 2, Partition: true, Drop: true, Seed: 3}, func(p LoadProgress) {
		mu.Lock()
		defer mu.Unlock()
		phases[p.Phase] = true
		last = p
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if st.Partitions != 2 || st.Chunks != 3+6*2 || st.CPU <= 0 || st.Data <= 0 || st.Keys <= 0 || st.Analyze <= 0 || st.RowsPerSec <= 0 {
		t.Errorf("stats %+v", st)
	}
	if !phases[PhaseCreate] || !phases[PhaseDone] || last.Phase != PhaseDone || last.Rows != last.TotalRows || last.Rows != st.Rows {
		t.Errorf("progress: phases %v, last %+v", phases, last)
	}
	checkRowCounts(t, conn, 2, &st)
	for _, table := range partitionedTables {
		if n := qInt(t, conn, "select count(*) from pg_inherits where inhparent = $1::regclass", table); n != 2 {
			t.Errorf("%s has %d partitions, want 2", table, n)
		}
		// Each partition holds exactly its warehouse.
		if n := qInt(t, conn, "select count(distinct ("+wColumn[table]+", tableoid)) from "+table); n != 2 {
			t.Errorf("%s: %d (warehouse, partition) pairs, want 2", table, n)
		}
	}
	for _, table := range []string{"warehouse", "district", "item"} {
		if n := qInt(t, conn, "select count(*) from pg_partitioned_table where partrelid = $1::regclass", table); n != 0 {
			t.Errorf("%s should not be partitioned", table)
		}
	}
	info, err := ReadInfo(ctx, conn)
	if err != nil || !info.Partitioned || info.Partitions != 2 || info.Warehouses != 2 || info.Seed != 3 {
		t.Errorf("ReadInfo = %+v, %v", info, err)
	}
	mustPassAll(t, conn)
}

func TestPartitionPlan(t *testing.T) {
	for _, c := range []struct{ w, parts, per int }{{1, 1, 1}, {64, 64, 1}, {65, 33, 2}, {100, 50, 2}, {1000, 63, 16}} {
		n := partitionCount(c.w)
		r := partitionRanges(c.w, n)
		if n != c.parts || len(r) != n || r[0][0] != 1 || r[len(r)-1][1] != c.w || r[0][1] != c.per {
			t.Errorf("W=%d: %d partitions %v, want %d of %d", c.w, n, r, c.parts, c.per)
		}
		for i := 1; i < len(r); i++ {
			if r[i][0] != r[i-1][1]+1 {
				t.Errorf("W=%d: ranges not contiguous: %v", c.w, r)
			}
		}
	}
	// Not partitioned, 2 workers: a chunk per table, all with FREEZE.
	cs := planChunks(4, 0, 2, 1)
	if len(cs) != len(Tables) {
		t.Errorf("%d chunks, want %d", len(cs), len(Tables))
	}
	for _, c := range cs {
		if !c.Freeze || c.Rel != c.Table {
			t.Errorf("chunk %+v", c)
		}
	}
	// Many workers: the big tables are split by warehouse ranges (plain
	// COPY), covering every warehouse once.
	cs = planChunks(8, 0, 8, 1)
	cover := map[string]int{}
	split := map[string]bool{}
	for _, c := range cs {
		if !c.Freeze {
			split[c.Table] = true
		}
		if c.Table != "item" {
			cover[c.Table] += c.WHi - c.WLo + 1
		}
	}
	if !split["stock"] || !split["order_line"] || split["item"] || split["warehouse"] {
		t.Errorf("split tables %v", split)
	}
	for table, n := range cover {
		if n != 8 {
			t.Errorf("%s: chunks cover %d warehouses, want 8", table, n)
		}
	}
}

// tableHashes fingerprints the generated data, without the load timestamps.
func tableHashes(t *testing.T, conn *pgx.Conn) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for table, cols := range map[string]string{
		"item":       "i_id, i_im_id, i_name, i_price, i_data",
		"stock":      "s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_10, s_data",
		"customer":   "c_w_id, c_d_id, c_id, c_first, c_last, c_credit, c_discount, c_data",
		"history":    "h_c_w_id, h_c_d_id, h_c_id, h_data",
		"orders":     "o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt",
		"order_line": "ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_amount, ol_dist_info",
		"district":   "d_w_id, d_id, d_name, d_tax",
		"warehouse":  "w_id, w_name, w_tax",
		"new_order":  "no_w_id, no_d_id, no_o_id",
	} {
		out[table] = qInt(t, conn, "select coalesce(sum(hashtextextended(("+cols+")::text, 0) % 1000003), 0)::bigint from "+table)
	}
	return out
}

// TestLoadInterruptedData cancels a load after its first chunk: the load
// is refused until resumed, a new load without flags points to --resume,
// and the resumed load equals an uninterrupted one with the same seed.
func TestLoadInterruptedData(t *testing.T) {
	t.Parallel()
	ref := testConn(t, loadedDB(t, 2))
	db := emptyDB(t)
	conn := testConn(t, db)
	ctx, cancel := context.WithCancel(ctxT(t, 3*time.Minute))
	defer cancel()
	o := LoadOptions{Warehouses: 2, Workers: 1, Seed: templateSeed}
	chunks := 0
	o.afterTask = func(kind, table string) {
		if kind == "data" {
			if chunks++; chunks == 2 { // stock and order_line are in, orders is not
				cancel()
			}
		}
	}
	_, err := Load(ctx, testConnector(t, db), o, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted load returned %v, want context.Canceled", err)
	}
	done := qInt(t, conn, "select count(*) from "+ProgressTable+" where done_at is not null")
	pending := qInt(t, conn, "select count(*) from "+ProgressTable+" where done_at is null")
	if done != 2 || pending != int64(len(Tables))-2 {
		t.Fatalf("progress after the interrupt: %d chunks done, %d pending; want 2 and %d", done, pending, len(Tables)-2)
	}
	time.Sleep(1100 * time.Millisecond) // the resume runs in another second: the rows must still get the load's date
	bg := context.Background()
	info, err := ReadInfo(bg, conn)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--resume") || info.Status != StatusLoading {
		t.Fatalf("ReadInfo of an interrupted load: %+v, %v (hint %q)", info, err, errs.HintOf(err))
	}
	_, err = Load(bg, testConnector(t, db), LoadOptions{Warehouses: 2}, nil)
	if errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--resume") {
		t.Fatalf("a new load over an interrupted one: %v (hint %q), want the --resume hint", err, errs.HintOf(err))
	}
	if _, err := Load(bg, testConnector(t, db), LoadOptions{Warehouses: 3, Resume: true}, nil); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("resume with other warehouses: %v, want a usage error", err)
	}

	st, err := Load(bg, testConnector(t, db), LoadOptions{Resume: true, Workers: 2}, nil)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if !st.Resumed || st.Skipped != 2 || st.Chunks != len(Tables)-2 || st.Warehouses != 2 {
		t.Errorf("resume stats %+v", st)
	}
	if _, err := ReadInfo(bg, conn); err != nil {
		t.Fatalf("ReadInfo after resume: %v", err)
	}
	checkRowCounts(t, conn, 2, nil)
	mustPassAll(t, conn)
	if n := qInt(t, conn, `select count(distinct d) from (select c_since as d from customer union select h_date from history
		union select o_entry_d from orders union select ol_delivery_d from order_line where ol_delivery_d is not null) x`); n != 1 {
		t.Errorf("the load's rows carry %d different dates, want 1 (O_ENTRY_D = OL_DELIVERY_D across chunks)", n)
	}
	got, want := tableHashes(t, conn), tableHashes(t, ref)
	for table := range want {
		if got[table] != want[table] {
			t.Errorf("%s differs from an uninterrupted load with the same seed", table)
		}
	}
}

// TestLoadInterruptedKeys cancels a load after its first key build: status
// indexing, refused; resume builds the missing keys only.
func TestLoadInterruptedKeys(t *testing.T) {
	t.Parallel()
	db := emptyDB(t)
	conn := testConn(t, db)
	ctx, cancel := context.WithCancel(ctxT(t, 3*time.Minute))
	defer cancel()
	var keysBuilt int
	o := LoadOptions{Warehouses: 1, Workers: 1, Seed: 5}
	o.afterTask = func(kind, table string) {
		if kind == "key" {
			keysBuilt++
			cancel()
		}
	}
	if _, err := Load(ctx, testConnector(t, db), o, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted load returned %v, want context.Canceled", err)
	}
	bg := context.Background()
	if n := qInt(t, conn, "select count(*) from "+ProgressTable+" where done_at is null"); n != 0 {
		t.Errorf("%d chunks pending after the data was in", n)
	}
	keysBefore := qInt(t, conn, "select count(*) from pg_class where relname = any($1)", keyNames())
	if keysBefore != int64(keysBuilt) || keysBefore == int64(len(Keys)) {
		t.Errorf("%d keys exist after the interrupt (%d built), want some but not all", keysBefore, keysBuilt)
	}
	if info, err := ReadInfo(bg, conn); err == nil || info.Status != StatusIndexing {
		t.Fatalf("ReadInfo of a load interrupted while indexing: %+v, %v", info, err)
	}
	st, err := Load(bg, testConnector(t, db), LoadOptions{Resume: true, Workers: 2}, nil)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if st.Chunks != 0 || st.Skipped != len(Tables) || st.Rows != 0 {
		t.Errorf("resume after the data copied rows again: %+v", st)
	}
	if n := qInt(t, conn, "select count(*) from pg_class where relname = any($1)", keyNames()); n != int64(len(Keys)) {
		t.Errorf("%d of %d keys after resume", n, len(Keys))
	}
	checkRowCounts(t, conn, 1, nil)
	mustPassAll(t, conn)
}

func TestReadInfoNoSchema(t *testing.T) {
	t.Parallel()
	db := emptyDB(t)
	conn := testConn(t, db)
	ctx := ctxT(t, time.Minute)
	if _, err := ReadInfo(ctx, conn); errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "load tpcc --warehouses") {
		t.Errorf("ReadInfo on an empty database: %v (hint %q)", err, errs.HintOf(err))
	}
	if _, err := Load(ctx, testConnector(t, db), LoadOptions{Resume: true}, nil); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("resume on an empty database: %v", err)
	}
	if _, err := Check(ctx, conn, CheckOptions{}); errs.KindOf(err) != errs.KindUsage {
		t.Errorf("check on an empty database: %v", err)
	}
	// tpcc tables that tunebench did not load are refused too.
	qExec(t, conn, TableDDL("warehouse"))
	if _, err := ReadInfo(ctx, conn); err == nil || !strings.Contains(err.Error(), "not loaded by tunebench") {
		t.Errorf("ReadInfo without the meta table: %v", err)
	}
}

// TestLoadSplitTables: with more workers than the tables can keep busy, the
// big tables are loaded in warehouse ranges by several streams at once
// (plain COPY), then vacuumed.
func TestLoadSplitTables(t *testing.T) {
	t.Parallel()
	db := emptyDB(t)
	conn := testConn(t, db)
	st, err := Load(ctxT(t, 3*time.Minute), testConnector(t, db), LoadOptions{Warehouses: 2, Workers: 4, Seed: 9, Format: FormatText}, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if split := qInt(t, conn, "select count(*) from "+ProgressTable+" where not frozen"); split < 4 || st.Chunks != len(Tables)+int(split)/2 {
		t.Errorf("%d chunks, %d of them split; want stock and order_line split in two", st.Chunks, split)
	}
	checkRowCounts(t, conn, 2, &st)
	// The split tables were vacuumed (to set hint bits and the visibility
	// map), the FREEZE ones not. (Whether VACUUM can mark the pages
	// all-visible depends on transactions elsewhere in the cluster: other
	// tests share the server.)
	if n := qInt(t, conn, "select count(*) from pg_stat_user_tables where relname in ('stock', 'order_line') and last_vacuum is not null"); n != 2 {
		t.Errorf("%d of the 2 split tables were vacuumed", n)
	}
	if n := qInt(t, conn, "select count(*) from pg_stat_user_tables where relname in ('customer', 'item') and last_vacuum is not null"); n != 0 {
		t.Errorf("%d FREEZE-loaded tables were vacuumed", n)
	}
	mustPassAll(t, conn)
}
