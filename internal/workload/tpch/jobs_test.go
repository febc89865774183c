package tpch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/testutil"
	"github.com/tunebench/tunebench/internal/workload/tpch/dbgen"
)

// oracleDir is the reference data of SF 0.01, by tpchgen-cli (whose
// output is byte-identical to the TPC's dbgen).
func oracleDir(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(testutil.Oracle(t), "bin", "tpchgen-cli")
	out := t.TempDir()
	if b, err := exec.Command(bin, "-s", "0.01", "--output-dir="+out).CombinedOutput(); err != nil {
		t.Fatalf("tpchgen-cli -s 0.01: %v\n%s", err, b)
	}
	return out
}

// tableText is every row of table tb as dbgen writes it ('|' after each
// field, char columns unpadded, L_QUANTITY without decimals), sorted.
func tableText(ctx context.Context, t *testing.T, conn *pgx.Conn, tb dbgen.Table) []string {
	t.Helper()
	rows, err := conn.Query(ctx, `select column_name, data_type from information_schema.columns
		where table_schema = current_schema() and table_name = $1 order by ordinal_position`, tb.String())
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		switch {
		case name == "l_quantity":
			cols = append(cols, name+"::int::text")
		default:
			cols = append(cols, name+"::text") // char(n)::text drops the padding
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var out []string
	q := "select concat_ws('|', " + strings.Join(cols, ", ") + ") || '|' from " + tb.String()
	rows, err = conn.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// sameAsOracle compares every table with the reference data.
func sameAsOracle(ctx context.Context, t *testing.T, conn *pgx.Conn, dir string) {
	t.Helper()
	for _, tb := range dbgen.Tables() {
		b, err := os.ReadFile(filepath.Join(dir, tb.String()+".tbl"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(want)
		got := tableText(ctx, t, conn, tb)
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", tb, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: the rows differ from dbgen's, first:\n got  %s\n want %s", tb, got[i], want[i])
				break
			}
		}
	}
}

// At 1 and 3 jobs the data is dbgen's, row for row; at 3 lineitem goes
// in 3 parts side by side; and in both the first scan of a table
// dirties no page (COPY FREEZE, or the load's VACUUM, set the hint bits).
func TestJobsLoadDbgenData(t *testing.T) {
	t.Parallel()
	dir := oracleDir(t)
	for _, jobs := range []int{1, 3} {
		connect, conn := testDB(t)
		ctx := ctxT(t, 3*time.Minute)
		st, err := Load(ctx, connect, LoadOptions{Scale: 0.01, Workers: jobs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		parts := map[string]int{}
		for _, ts := range st.Tables {
			parts[ts.Table] = ts.Parts
		}
		wantParts := 1
		if jobs > 1 {
			wantParts = 3
		}
		if parts["lineitem"] != wantParts || parts["region"] != 1 {
			t.Errorf("jobs %d: parts %v, want lineitem in %d and region whole", jobs, parts, wantParts)
		}
		sameAsOracle(ctx, t, conn, dir)
		for _, tb := range dbgen.Tables() {
			if n, plan := testutil.ScanDirtied(ctx, t, conn, tb.String()); n > 0 {
				t.Errorf("jobs %d: a first scan of %s dirtied %d pages:\n%s", jobs, tb, n, plan)
			}
		}
		// And the pages are all-visible: no vacuum is left for later. Parts
		// copied side by side may leave a few new pages without rows where
		// they extended the table at once, which VACUUM does not mark (and
		// no query reads rows from): PostgreSQL 15 extends a relation by 20
		// pages per backend waiting on its extension lock, so 3 parts can
		// leave 20 or more (1160/1180 seen); a table not vacuumed has none
		// marked. The slack is 16 pages or 5%, and 20 pages per part of a
		// table copied in parts (orders 269/288 seen with 3 parts).
		var notVisible []string
		rows, err := conn.Query(ctx, `select relname::text, relallvisible, relpages from pg_class where relname = any($1)`, tableNames())
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			var visible, pages int32
			if err := rows.Scan(&name, &visible, &pages); err != nil {
				t.Fatal(err)
			}
			slack := max(16, pages/20)
			if n := parts[name]; n > 1 {
				slack = max(slack, int32(20*n))
			}
			if visible < pages-slack {
				notVisible = append(notVisible, fmt.Sprintf("%s %d/%d", name, visible, pages))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(notVisible) > 0 {
			t.Errorf("jobs %d: pages not all-visible after the load: %v", jobs, notVisible)
		}
		rep, err := Check(ctx, conn)
		if err != nil || !rep.Passed {
			t.Fatalf("jobs %d: check %v %+v", jobs, err, rep)
		}
	}
}

func tableNames() []string {
	var out []string
	for _, tb := range dbgen.Tables() {
		out = append(out, tb.String())
	}
	return out
}

// A parallel load interrupted with one of lineitem's parts committed (all
// its rows: the others took no chunk) and the others failed resumes (at another --jobs too): lineitem, not recorded
// done, is loaded again from empty, the tables recorded done are kept, and
// the data is dbgen's.
func TestInterruptedPartsResume(t *testing.T) {
	t.Parallel()
	dir := oracleDir(t)
	connect, conn := testDB(t)
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	first := make(chan struct{})
	var once sync.Once
	o := LoadOptions{Scale: 0.01, Workers: 3}
	o.partHook = func(tb dbgen.Table, k int, phase string) error {
		switch {
		case tb != dbgen.Lineitem:
		case k == 0 && phase == "committed":
			once.Do(func() { close(first) })
		case k > 0 && phase == "start":
			// The other parts fail once the first (which took every
			// chunk) is committed.
			select {
			case <-first:
			case <-time.After(time.Minute):
			}
			cancel()
			return context.Canceled
		}
		return nil
	}
	_, err := Load(ctx, connect, o, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the load was not interrupted: %v", err)
	}
	m, ok, err := readMeta(ctxT(t, time.Minute), conn)
	if err != nil || !ok {
		t.Fatalf("meta after the interrupt: %v %v", ok, err)
	}
	if m.Status != statusLoading || slices.Contains(m.TablesDone, "lineitem") {
		t.Fatalf("after the interrupt: status %s, done %v; want loading without lineitem", m.Status, m.TablesDone)
	}
	var kept int64
	if err := conn.QueryRow(ctxT(t, time.Minute), "select count(*) from lineitem").Scan(&kept); err != nil || kept != 60175 {
		t.Fatalf("lineitem after the interrupt: %d rows (%v), want the first part's 60175", kept, err)
	}
	o.partHook = nil
	o.Workers = 2
	st, err := Load(ctxT(t, 2*time.Minute), connect, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Resumed) != len(m.TablesDone) || slices.Contains(st.Resumed, "lineitem") {
		t.Errorf("resumed load kept %v, want %v", st.Resumed, m.TablesDone)
	}
	for _, ts := range st.Tables {
		if ts.Table == "lineitem" && (ts.Parts != 2 || ts.Rows != 60175) {
			t.Errorf("resumed lineitem: %+v, want all 60175 rows in 2 parts", ts)
		}
	}
	ctx = ctxT(t, time.Minute)
	sameAsOracle(ctx, t, conn, dir)
	rep, err := Check(ctx, conn)
	if err != nil || !rep.Passed {
		t.Fatalf("check after the resumed load: %v %+v", err, rep)
	}
}
