package pg

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tunebench/tunebench/internal/target"
	"github.com/tunebench/tunebench/internal/testutil"
)

// TestSlotEncoding: integers go in binary, in place (a statement keeps its
// Bind), amounts and names as text, int4[] in PostgreSQL's binary array
// format.
func TestSlotEncoding(t *testing.T) {
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Int4, target.Int8, target.Numeric, target.Text, target.Int4Array}}
	s := &session{spec: spec, types: spec.Slots, slots: make([][]byte, 5), bufs: [][]byte{make([]byte, 4), make([]byte, 8), nil, nil, nil}}
	s.SetInt(0, -2)
	before := &s.bufs[0][0]
	s.SetInt(0, 7)
	if string(s.slots[0]) != "\x00\x00\x00\x07" || &s.slots[0][0] != before {
		t.Errorf("int4 % x (moved: %v)", s.slots[0], &s.slots[0][0] != before)
	}
	s.SetInt(1, 1<<40)
	if string(s.slots[1]) != "\x00\x00\x01\x00\x00\x00\x00\x00" {
		t.Errorf("int8 % x", s.slots[1])
	}
	s.SetText(2, []byte("1234.05"))
	s.SetInt(3, 42)
	if string(s.slots[2]) != "1234.05" || string(s.slots[3]) != "42" {
		t.Errorf("text slots %q %q", s.slots[2], s.slots[3])
	}
	s.SetNull(3)
	if s.slots[3] != nil {
		t.Error("NULL")
	}
	s.SetIntArray(4, []int32{7, 100001})
	want := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 4, 0, 1, 0x86, 0xa1}
	if string(s.slots[4]) != string(want) {
		t.Errorf("int4[] % x, want % x", s.slots[4], want)
	}
}

// TestNullInIntegerSlot: a statement whose integer parameters keep their
// Bind refills them once a slot it uses holds a NULL (or text), and sends
// what the slot holds.
func TestNullInIntegerSlot(t *testing.T) {
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Int4, target.Int4},
		Stmts: []target.Stmt{{Name: "a", SQL: "select $1", Params: []int{0}}, {Name: "b", SQL: "select $1", Params: []int{1}}}}
	s := &session{spec: spec, types: spec.Slots, slots: make([][]byte, 2), bufs: [][]byte{make([]byte, 4), make([]byte, 4)},
		fixed: []bool{true, true}, users: [][]int{{0}, {1}}, args: [][][]byte{make([][]byte, 1), make([][]byte, 1)}}
	s.slots[0], s.slots[1] = s.bufs[0], s.bufs[1]
	s.fill(0)
	s.fill(1)
	s.SetInt(0, 5)
	if string(s.args[0][0]) != "\x00\x00\x00\x05" {
		t.Fatalf("in-place int: % x", s.args[0][0])
	}
	s.SetNull(0)
	if s.fixed[0] == true || s.fixed[1] == false {
		t.Fatalf("fixed %v after a NULL in slot 0", s.fixed)
	}
	s.fill(0)
	if s.args[0][0] != nil {
		t.Errorf("NULL sent as % x", s.args[0][0])
	}
	s.SetText(0, []byte("7"))
	s.fill(0)
	if string(s.args[0][0]) != "7" {
		t.Errorf("text in an int slot: %q", s.args[0][0])
	}
	s.SetInt(0, 9)
	s.fill(0)
	if string(s.args[0][0]) != "\x00\x00\x00\x09" {
		t.Errorf("int after a NULL: % x", s.args[0][0])
	}
}

// TestTextResultsAndUnknownParams: a session of a script's kind sends
// its parameters as text of a type the server infers, and keeps each
// statement's first row as text with the result column names.
func TestTextResultsAndUnknownParams(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx := context.Background()
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Unknown, target.Unknown}, Results: true, TextResults: true,
		Stmts: []target.Stmt{
			{Name: "q", SQL: "SELECT $1 + 1 AS a, upper($2) AS b, NULL::int AS c", Params: []int{0, 1}},
			{Name: "n", SQL: "SELECT 1 AS one WHERE false"},
		}}
	sess, err := Sessions{Connect: func(ctx context.Context) (*pgx.Conn, error) { return srv.Connect(ctx) }}.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	sess.SetText(0, []byte("41"))
	sess.SetText(1, []byte("xy"))
	sess.Queue(0)
	sess.Queue(1)
	if err := sess.Send(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Receive(); err != nil {
		t.Fatal(err)
	}
	row := sess.Row(0)
	if sess.Rows(0) != 1 || len(row) != 3 || string(row[0]) != "42" || string(row[1]) != "XY" || row[2] != nil {
		t.Errorf("rows %d, first row %q", sess.Rows(0), row)
	}
	if cols := sess.Columns(0); len(cols) != 3 || cols[0] != "a" || cols[1] != "b" || cols[2] != "c" {
		t.Errorf("columns %q", cols)
	}
	if sess.Rows(1) != 0 || len(sess.Row(1)) != 0 || len(sess.Columns(1)) != 1 {
		t.Errorf("empty result: rows %d row %q columns %q", sess.Rows(1), sess.Row(1), sess.Columns(1))
	}
}

// TestSendQuery: a query of several statements (a compound command) is a
// round trip of its own: a result per statement that ran (the empty ones
// between semicolons are none), each with its rows, last row and column
// names; 20 of them, more than a round trip of queued statements holds;
// the statements after an error do not run; and the session's statements
// work again after it.
func TestSendQuery(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx := context.Background()
	spec := &target.SessionSpec{Results: true, TextResults: true, Stmts: []target.Stmt{{Name: "one", SQL: "SELECT 1 AS x"}}}
	sess, err := Sessions{Connect: func(ctx context.Context) (*pgx.Conn, error) { return srv.Connect(ctx) }}.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	roundTrip := func(sql string) error {
		t.Helper()
		if err := sess.SendQuery([]byte(sql)); err != nil {
			t.Fatal(err)
		}
		return sess.Receive()
	}
	if err := roundTrip("; SELECT 1 AS a, NULL AS b; ; SELECT g AS c FROM generate_series(1, 3) g; CREATE TEMP TABLE t (x int); SELECT 5 WHERE false;"); err != nil {
		t.Fatal(err)
	}
	if sess.Results() != 4 {
		t.Fatalf("%d results, want 4", sess.Results())
	}
	for k, want := range []struct {
		rows    int
		fields  string
		lastRow string
	}{{1, "a,b", "1,"}, {3, "c", "3"}, {0, "", ""}, {0, "?column?", ""}} {
		var vals []string
		for _, v := range sess.Row(k) {
			vals = append(vals, string(v))
		}
		if sess.Rows(k) != want.rows || strings.Join(sess.Fields(k), ",") != want.fields || strings.Join(vals, ",") != want.lastRow {
			t.Errorf("result %d: %d rows, fields %q, last row %q; want %+v", k, sess.Rows(k), sess.Fields(k), vals, want)
		}
	}
	if err := roundTrip(strings.Repeat("SELECT 7 AS s;", 20)); err != nil || sess.Results() != 20 || sess.Rows(19) != 1 || sess.Fields(19)[0] != "s" {
		t.Errorf("20 statements: %v, %d results", err, sess.Results())
	}
	if err := roundTrip("INSERT INTO t VALUES (1); SELECT 1/0; INSERT INTO t VALUES (2)"); err == nil || sess.Results() != 1 || sess.InTx() {
		t.Errorf("an error in the second statement: %v, %d results, in a transaction %v", err, sess.Results(), sess.InTx())
	}
	// One implicit transaction: the first insert was rolled back with it.
	if err := roundTrip("SELECT count(*) AS n FROM t"); err != nil || string(sess.Row(0)[0]) != "0" {
		t.Errorf("rows after the failed query: %v %q", err, sess.Row(0))
	}
	sess.Queue(0)
	if err := sess.Send(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Receive(); err != nil || sess.Results() != 1 || sess.Rows(0) != 1 || string(sess.Row(0)[0]) != "1" || sess.Fields(0) != nil {
		t.Errorf("a prepared statement after the queries: %v, %d rows, %q", err, sess.Rows(0), sess.Row(0))
	}
}

// TestLazySession: a session of more statements than target.MaxPrepared
// connects without preparing them (the server has only the one whose
// columns are read), prepares each in the round trip that first runs it,
// keeps the first MaxPrepared prepared under names of their own and sends
// the others through the unnamed statement, gives every statement its own
// result (several unnamed ones in one pipelined round trip included), and
// after a failed round trip parses the named ones it touched again.
func TestLazySession(t *testing.T) {
	srv := testutil.StartServer(t)
	ctx := context.Background()
	n := target.MaxPrepared*2 + 5
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Unknown}, Results: true, TextResults: true}
	for i := 0; i < n; i++ {
		spec.Stmts = append(spec.Stmts, target.Stmt{Name: fmt.Sprintf("s%d", i), SQL: fmt.Sprintf("SELECT %d + $1::int AS v%d", i, i), Params: []int{0}})
	}
	spec.Stmts[7].Columns = true
	spec.Stmts[9].SQL = "SELECT 9 / $1::int AS v9"
	if !spec.Lazy() {
		t.Fatal("not lazy")
	}
	sess, err := Sessions{Connect: func(ctx context.Context) (*pgx.Conn, error) { return srv.Connect(ctx) }}.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	prepared := func() int {
		t.Helper()
		if err := sess.SendQuery([]byte("SELECT count(*) FROM pg_prepared_statements")); err != nil {
			t.Fatal(err)
		}
		if err := sess.Receive(); err != nil {
			t.Fatal(err)
		}
		k, _ := strconv.Atoi(string(sess.Row(0)[0]))
		return k
	}
	if k := prepared(); k != 1 {
		t.Errorf("%d statements prepared at connect, want 1 (the one whose columns are read)", k)
	}
	if cols := sess.Columns(7); len(cols) != 1 || cols[0] != "v7" {
		t.Errorf("columns of the pinned statement: %q", cols)
	}
	run := func(arg int, stmts ...int) error {
		t.Helper()
		sess.SetText(0, []byte(strconv.Itoa(arg)))
		for _, i := range stmts {
			sess.Queue(i)
		}
		if err := sess.Send(); err != nil {
			t.Fatal(err)
		}
		err := sess.Receive()
		if err != nil {
			return err
		}
		for k, i := range stmts {
			if got, want := string(sess.Row(k)[0]), strconv.Itoa(i+arg); sess.Rows(k) != 1 || got != want {
				t.Errorf("statement %d: %q, want %s", i, got, want)
			}
		}
		return nil
	}
	for i := 0; i < n; i++ {
		if i == 9 || i == 13 {
			continue
		}
		if err := run(1000, i); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	// The first MaxPrepared but 9 and 13 (not run yet) and 7 (pinned,
	// under its own name), and the pinned one.
	if k := prepared(); k != target.MaxPrepared-2 {
		t.Errorf("%d statements prepared after all ran once, want %d", k, target.MaxPrepared-2)
	}
	m := target.MaxPrepared
	if err := run(5, 3, 3+m, 3+2*m, 3, 7, 4+m); err != nil {
		t.Fatal(err)
	}
	// A failed round trip: the division by zero comes before statement
	// 13's Parse, which the server then skips; 13 must be parsed again,
	// not taken for parsed.
	if err := run(0, 9, 13, 4+m); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("9 / 0: %v", err)
	}
	if err := run(2, 13); err != nil {
		t.Fatalf("13 after the failed round trip: %v", err)
	}
	sess.SetText(0, []byte("3"))
	sess.Queue(9)
	if err := sess.Send(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Receive(); err != nil || string(sess.Row(0)[0]) != "3" {
		t.Errorf("9 / 3 after its failure: %v %q", err, sess.Row(0))
	}
	if err := run(3, 12, 12+m, 4+2*m); err != nil {
		t.Fatalf("after the failed round trip: %v", err)
	}
	if k := prepared(); k > target.MaxPrepared+1 {
		t.Errorf("%d statements prepared, more than %d", k, target.MaxPrepared+1)
	}
}
