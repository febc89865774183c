package tpch

import (
	"context"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/option"
	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/target/mariadb/mariadbtest"
	"github.com/tunebench/tunebench/internal/workload"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
	"github.com/tunebench/tunebench/internal/workload/tpch/qgen"
)

// options are the workload's options with their defaults, then set.
func options(set map[string]string) option.Values {
	v := option.Values{}
	for _, o := range (Workload{}).Options() {
		v[o.Name] = o.DefaultValue()
	}
	for k, x := range set {
		v[k] = x
	}
	return v
}

func measure(ctx context.Context, t *testing.T, tt target.Target, set map[string]string) *Summary {
	t.Helper()
	r, err := Workload{}.NewRun(ctx, &workload.RunEnv{Target: tt, Options: options(set), Seed: 7, Note: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.(workload.Measurer).Measure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m.Summary.Extra.(*Summary)
}

func checkPasses(ctx context.Context, t *testing.T, tt target.Target, after string) {
	t.Helper()
	rep, err := Workload{}.Check(ctx, &workload.CheckEnv{Target: tt, Options: options(nil), Note: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != nil {
		t.Fatalf("check after %s failed: %+v", after, rep.Blocks)
	}
}

// TestMariaDB: tpch on a managed MariaDB: the load at SF 0.01 (with the
// foreign keys), interrupted after its first table's record and resumed
// over two jobs, is dbgen's data
// and passes the check; a
// load over it without --drop, and one that does not fit, are refused; the 22 queries
// answer as the reference answers say; a power test with --explain runs
// RF1, the queries and RF2 and gives Power@Size, a query timeout is
// recorded as such, and the check passes after the refresh functions.
func TestMariaDB(t *testing.T) {
	t.Parallel()
	tt, _ := mariadbtest.StartMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var report string
	load := func(set map[string]string) error {
		rep, err := Workload{}.Load(ctx, &workload.LoadEnv{Target: tt, Options: options(set), Progress: func(workload.LoadProgress) {}, Note: t.Logf})
		if rep != nil {
			report = fmt.Sprint(rep.Blocks)
		}
		return err
	}
	// A load that does not fit in the data directory's filesystem is
	// refused before anything is made.
	if err := load(map[string]string{"scale": "10000"}); errs.KindOf(err) != errs.KindEnvironment || !strings.Contains(err.Error(), "not enough space for tpch scale 10000") {
		t.Errorf("a load that does not fit: %v", err)
	}
	// A load interrupted once its first table is recorded done (one job:
	// every table's rows go in first, then each table's indexes and
	// statistics, and its record after them): it is resumed by the same
	// command, which keeps that table and loads the others again.
	ictx, stop := context.WithCancel(ctx)
	var first string
	o := LoadOptions{Scale: 0.01, Workers: 1, ForeignKeys: true}
	progress := func(p LoadProgress) {
		if t, ok := strings.CutPrefix(p.Detail, "record "); ok && first == "" {
			first = t
			stop()
		}
	}
	if _, err := loadMariaDB(ictx, tt.(target.Admins), o, progress); err == nil || first == "" {
		t.Fatalf("the load was not interrupted after a table's record: %v", err)
	}
	if err := load(map[string]string{"scale": "0.02"}); errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--scale 0.01") {
		t.Errorf("a load of another scale over an interrupted one: %v", err)
	}
	if err := load(map[string]string{"scale": "0.01", "jobs": "2", "foreign_keys": "true"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report, "resumed: kept "+first+" from the interrupted load") {
		t.Errorf("the resumed load: %s", report)
	}
	if err := load(map[string]string{"scale": "0.01"}); errs.KindOf(err) != errs.KindUsage || !strings.Contains(errs.HintOf(err), "--drop") {
		t.Errorf("a second load without --drop: %v", err)
	}
	a, err := tt.(target.Admins).Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var fks, lines int
	var sum string
	if err := a.QueryRow(ctx, "SELECT COUNT(*) FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND CONSTRAINT_TYPE = 'FOREIGN KEY'").Scan(&fks); err != nil {
		t.Fatal(err)
	}
	if fks != len(mariaForeignKeyDDL) {
		t.Errorf("%d foreign keys, want %d", fks, len(mariaForeignKeyDDL))
	}
	// Lineitem's rows as the generator writes them (the oracle of
	// dbgen's files is checked on PostgreSQL): their count and a sum over
	// every column's text.
	if err := a.QueryRow(ctx, "SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', "+strings.Join(mariaColumns[dbgen.Lineitem], ", ")+"))) FROM lineitem").Scan(&lines, &sum); err != nil {
		t.Fatal(err)
	}
	data, n := dbgen.New(0.01, dbgen.COPY).Append(nil, dbgen.Lineitem, 0, dbgen.Units(dbgen.Lineitem, 0.01))
	want := crcSum(data)
	if int64(lines) != n || sum != want {
		t.Errorf("lineitem: %d rows, CRC sum %s; the generator's %d rows, %s", lines, sum, n, want)
	}
	checkPasses(ctx, t, tt, "the load")

	x := measure(ctx, t, tt, map[string]string{"validate": "true"})
	if x.Failed != 0 || len(x.Validation) != 22 {
		for _, c := range x.Validation {
			if !c.Passed {
				t.Errorf("Q%d: %s", c.Query, c.Detail)
			}
		}
		t.Fatalf("validation: %d of %d failed", x.Failed, len(x.Validation))
	}

	x = measure(ctx, t, tt, map[string]string{"test": "power", "explain": "true", "analyze": "true"})
	if x.Power <= 0 || len(x.Refreshes) != 2 || len(x.Plans) != 22 || x.Errors+x.TimedOut != 0 {
		t.Fatalf("power test: power %g, refreshes %+v, %d plans, %d errors, %d timed out", x.Power, x.Refreshes, len(x.Plans), x.Errors, x.TimedOut)
	}
	if !strings.Contains(x.Plans[0].Shape, "table_name=lineitem") || strings.Contains(x.Plans[0].Shape, "r_") {
		t.Errorf("Q1's plan shape:\n%s", x.Plans[0].Shape)
	}
	checkPasses(ctx, t, tt, "a power test")

	// A time limit no query meets: the queries time out (a query done
	// within a millisecond may not notice), the refresh functions (not
	// queries) do not.
	x = measure(ctx, t, tt, map[string]string{"test": "power", "query_timeout": "1us"})
	if x.TimedOut < 11 || x.Errors != 0 || len(x.Refreshes) != 2 {
		t.Errorf("with a 1 µs limit: %d queries timed out, %d errors, refreshes %+v", x.TimedOut, x.Errors, x.Refreshes)
	}
	checkPasses(ctx, t, tt, "a second power test")
}

// crcSum is the sum of CRC32 over the generator's lineitem lines, as
// MariaDB's CRC32(CONCAT_WS('|', ...)) computes it over the columns' text
// (l_quantity, which the generator writes without decimals, with them).
func crcSum(data []byte) string {
	var s uint64
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Split(line, "|")
		f[4] += ".00"
		s += uint64(crc32.ChecksumIEEE([]byte(strings.Join(f, "|"))))
	}
	return strconv.FormatUint(s, 10)
}

// TestMariaQueries: every rewrite applies to its query, and none of the
// PostgreSQL forms MariaDB 10.11 refuses is left.
func TestMariaQueries(t *testing.T) {
	for q := 1; q <= 22; q++ {
		for _, sf := range []float64{0.01, 1} {
			sql := mariaQuery(qgen.Validation(q, sf)).SQL
			if strings.Contains(sql, "interval '") || strings.Contains(sql, "c_orders (") {
				t.Errorf("Q%d at SF %g:\n%s", q, sf, sql)
			}
		}
		for _, sql := range qgen.Stream(7, 1, 1) {
			_ = mariaQuery(sql)
		}
	}
}

func TestMariaPlanShape(t *testing.T) {
	a := `{"query_optimization": {"r_total_time_ms": 0.1},
  "query_block": {"select_id": 1, "r_loops": 1, "r_total_time_ms": 5.2,
    "filesort": {"sort_key": "x", "r_loops": 1,
      "nested_loop": [
        {"table": {"table_name": "a", "access_type": "ALL", "possible_keys": ["k"], "rows": 100, "r_rows": 99, "filtered": 100, "attached_condition": "a.x > 5"}},
        {"table": {"table_name": "b", "access_type": "eq_ref", "key": "PRIMARY", "used_key_parts": ["k"], "ref": ["a.k"], "rows": 1, "r_rows": 1}}
      ]}}}`
	want := "0:query_block\n1:select_id=1\n1:filesort\n2:nested_loop\n3:table\n4:table_name=a\n4:access_type=ALL\n3:table\n4:table_name=b\n4:access_type=eq_ref\n4:key=PRIMARY"
	got, err := MariaPlanShape(a)
	if err != nil || got != want {
		t.Errorf("shape (%v):\n%s\nwant\n%s", err, got, want)
	}
	b := strings.NewReplacer(`"r_rows": 99`, `"r_rows": 7`, `"rows": 100`, `"rows": 3`, "a.x > 5", "a.x > 9").Replace(a)
	if s, _ := MariaPlanShape(b); s != got {
		t.Errorf("measures and conditions changed the shape:\n%s", s)
	}
}
