package mariadb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/step"
	"github.com/tunebench/tunebench/internal/target"
)

func TestPlaceholders(t *testing.T) {
	for _, c := range []struct {
		in, out string
		order   []int
	}{
		{"SELECT 1", "SELECT 1", nil},
		{"UPDATE t SET a = a + $1 WHERE id = $2", "UPDATE t SET a = a + ? WHERE id = ?", []int{1, 2}},
		{"SELECT $2, $1, $2", "SELECT ?, ?, ?", []int{2, 1, 2}},
		{"SELECT '$1', `$2`, \"$3\", $1 -- $2\n, $2 # $3\n/* $4 */", "SELECT '$1', `$2`, \"$3\", ? -- $2\n, ? # $3\n/* $4 */", []int{1, 2}},
		{`SELECT 'it''s $1', 'a\'$2', $3`, `SELECT 'it''s $1', 'a\'$2', ?`, []int{3}},
		{"SELECT t$1, v--$1", "SELECT t$1, v--?", []int{1}},
	} {
		out, order, err := Placeholders(c.in)
		if err != nil || out != c.out || len(order) != len(c.order) {
			t.Errorf("%q: %q %v %v", c.in, out, order, err)
			continue
		}
		for i := range order {
			if order[i] != c.order[i] {
				t.Errorf("%q: order %v, want %v", c.in, order, c.order)
			}
		}
	}
	if _, _, err := Placeholders("SELECT '$1"); err == nil {
		t.Error("an unterminated quote")
	}
}

// sessionServer starts a managed MariaDB for a session test, with a table.
func sessionServer(t *testing.T) (*Target, *Server) {
	t.Helper()
	needMariaDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Dir: serverDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	db, err := s.Open(DefaultDatabase)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE kv (id INT PRIMARY KEY, v BIGINT, u INT UNSIGNED, f DOUBLE, d DECIMAL(10,2), s VARCHAR(20), dt DATETIME(3), dd DATE, tm TIME, n INT)",
		"INSERT INTO kv VALUES (1, -5, 4000000000, 1.5, 12.34, 'one', '2026-11-29 10:11:12.345', '2026-11-29', '-25:01:02', NULL), (2, 7, 0, 0, 0, '', '2026-01-01 00:00:00', '2026-01-01', '00:00:00', NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return &Target{cfg: s.Config(DefaultDatabase), srv: s}, s
}

// TestSession: the wire protocol of the worker sessions. Values of every
// kind come back as MariaDB writes them in text; a round trip of queued
// statements stops at the first error; the transaction state follows the
// server's status; a compound command runs in one round trip; a deadlock
// is retryable and leaves no transaction; a lock wait timeout leaves it
// open, the session says so and rolls it back; a cancelled step
// interrupts a statement in flight.
func TestSession(t *testing.T) {
	t.Parallel()
	tt, _ := sessionServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := &target.SessionSpec{
		Slots:   []target.ParamType{target.Int4, target.Unknown},
		Results: true,
		Setup:   []string{"SET SESSION innodb_lock_wait_timeout = 1"},
		Stmts: []target.Stmt{
			{Name: "sel", SQL: "SELECT id, v, u, f, d, s, dt, dd, tm, n FROM kv WHERE id = $1", Params: []int{0}},
			{Name: "upd", SQL: "UPDATE kv SET v = v + $2 WHERE id = $1", Params: []int{0, 1}},
			{Name: "begin", SQL: "BEGIN"},
			{Name: "commit", SQL: "COMMIT"},
			{Name: "bad", SQL: "INSERT INTO kv (id) VALUES (1)"},
		},
	}
	s1, err := tt.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	var out step.Outcome
	if !s1.Ready(ctx, &out) {
		t.Fatal(out.Err)
	}
	roundTrip := func(s target.Session, stmts ...int) error {
		for _, i := range stmts {
			s.Queue(i)
		}
		if err := s.Send(); err != nil {
			return err
		}
		return s.Receive()
	}

	s1.SetInt(0, 1)
	if err := roundTrip(s1, 0); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, v := range s1.Row(0) {
		if v == nil {
			got = append(got, "NULL")
		} else {
			got = append(got, string(v))
		}
	}
	want := "1 -5 4000000000 1.5 12.34 one 2026-11-29 10:11:12.345 2026-11-29 -25:01:02 NULL"
	if strings.Join(got, " ") != want || s1.Rows(0) != 1 || s1.Int(0, 0) != 1 || s1.Int(0, 1) != -5 {
		t.Errorf("row %q rows %d ints %d %d, want %q", strings.Join(got, " "), s1.Rows(0), s1.Int(0, 0), s1.Int(0, 1), want)
	}
	if cols := strings.Join(s1.Columns(0), ","); cols != "id,v,u,f,d,s,dt,dd,tm,n" {
		t.Errorf("columns %s", cols)
	}

	// BEGIN, an UPDATE, a failing statement, and the COMMIT after it in
	// one round trip: the COMMIT is not sent, the transaction stays open.
	s1.SetText(1, []byte("10"))
	err = roundTrip(s1, 2, 1, 4, 3)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 || s1.Results() != 2 || s1.Rows(1) != 1 {
		t.Fatalf("a failing statement: %v (results %d)", err, s1.Results())
	}
	if !s1.InTx() {
		t.Error("the transaction is open after the failed statement")
	}
	if class, code := s1.Classify(err, false, 1); class != step.ClassFailedError || code != "1062" || s1.Retryable(code) {
		t.Errorf("classified %v %s", class, code)
	}
	if err := s1.Rollback(); err != nil || s1.InTx() {
		t.Fatalf("rollback: %v (in tx %v)", err, s1.InTx())
	}
	if err := roundTrip(s1, 0); err != nil || string(s1.Row(0)[1]) != "-5" {
		t.Errorf("the update was rolled back: %v %s", err, s1.Row(0)[1])
	}

	// A compound command: every result, the fields of each, the
	// transaction state after it.
	if err := s1.SendQuery([]byte("BEGIN; UPDATE kv SET v = v + 1 WHERE id = 2; SELECT v AS vv, s FROM kv WHERE id = 2")); err != nil {
		t.Fatal(err)
	}
	if err := s1.Receive(); err != nil {
		t.Fatal(err)
	}
	if s1.Results() != 3 || s1.Rows(1) != 1 || string(s1.Row(2)[0]) != "8" || strings.Join(s1.Fields(2), ",") != "vv,s" || !s1.InTx() {
		t.Errorf("compound: results %d rows %d row %q fields %v in tx %v", s1.Results(), s1.Rows(1), s1.Row(2), s1.Fields(2), s1.InTx())
	}
	if err := roundTrip(s1, 3); err != nil || s1.InTx() {
		t.Errorf("commit: %v (in tx %v)", err, s1.InTx())
	}

	// A lock wait timeout (1205) leaves the transaction open.
	s2, err := tt.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if !s2.Ready(ctx, &out) {
		t.Fatal(out.Err)
	}
	s1.SetInt(0, 1)
	s1.SetInt(1, 1)
	s2.SetInt(0, 1)
	s2.SetInt(1, 1)
	if err := roundTrip(s1, 2, 1); err != nil {
		t.Fatal(err)
	}
	err = roundTrip(s2, 2, 1)
	if !errors.As(err, &me) || me.Number != ErrLockWait || !s2.InTx() {
		t.Fatalf("lock wait: %v (in tx %v)", err, s2.InTx())
	}
	if class, code := s2.Classify(err, false, 1); class != step.ClassFailedError || code != "1205" || s2.Retryable(code) {
		t.Errorf("lock wait classified %v %s", class, code)
	}
	if err := s2.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(s1, 3); err != nil {
		t.Fatal(err)
	}

	// A deadlock (1213): retryable, and the server rolled back.
	s1.SetInt(0, 1)
	s2.SetInt(0, 2)
	if err := roundTrip(s1, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(s2, 2, 1); err != nil {
		t.Fatal(err)
	}
	s1.SetInt(0, 2)
	s2.SetInt(0, 1)
	s1.Queue(1)
	if err := s1.Send(); err != nil { // waits for s2's row
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	err2 := roundTrip(s2, 1) // closes the cycle
	err1 := s1.Receive()
	dead, alive := err2, s1
	if err2 == nil {
		dead, alive = err1, s2
	}
	if !errors.As(dead, &me) || me.Number != ErrDeadlock {
		t.Fatalf("deadlock: %v / %v", err1, err2)
	}
	if class, code := Classify(dead, false, 1); class != step.ClassFailedRetryExhausted || code != "1213" || !Retryable(code) {
		t.Errorf("deadlock classified %v %s", class, code)
	}
	if err := roundTrip(alive, 3); err != nil {
		t.Fatal(err)
	}

	// A cancelled step interrupts a statement in flight, and the session
	// connects again on the next Ready.
	sleep := &target.SessionSpec{Stmts: []target.Stmt{{Name: "sleep", SQL: "SELECT SLEEP(30)"}}}
	s3, err := tt.NewSession(ctx, sleep)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	sctx, scancel := context.WithCancel(ctx)
	if !s3.Ready(sctx, &out) {
		t.Fatal(out.Err)
	}
	time.AfterFunc(200*time.Millisecond, scancel)
	start := time.Now()
	err = roundTrip(s3, 0)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("cancel: %v after %v", err, time.Since(start))
	}
	out = step.Outcome{Attempts: 1}
	if !s3.Lost(sctx, err, false, &out) {
		t.Errorf("a cancelled statement drops the connection")
	}
	if !s3.Ready(ctx, &out) {
		t.Fatalf("reconnect: %v", out.Err)
	}
}

// TestWireCapabilities: the session reads the capabilities the driver
// negotiated from its connection's fields; a new version of the driver
// that renames them fails here, not in a run.
func TestWireCapabilities(t *testing.T) {
	t.Parallel()
	tt, _ := sessionServer(t)
	s, err := newSession(context.Background(), tt.cfg, &target.SessionSpec{Stmts: []target.Stmt{{Name: "one", SQL: "SELECT 1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// MariaDB 10.6 and later: both.
	if !s.w.deprecateEOF || !s.w.cacheMeta {
		t.Errorf("deprecate EOF %v, cache metadata %v", s.w.deprecateEOF, s.w.cacheMeta)
	}
}

// TestSessionStatements: what a review found in the wire code. A
// statement's result columns follow its table's schema (with cached
// metadata the server sends them only when they change); a prepared CALL's
// results and final OK are all read; a statement's parameters are bound
// when it is queued; a LOAD DATA LOCAL INFILE in a script is refused and
// the connection stays in step.
func TestSessionStatements(t *testing.T) {
	t.Parallel()
	tt, s := sessionServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, _ := s.Open(DefaultDatabase)
	defer db.Close()
	for _, q := range []string{"CREATE TABLE m (id INT PRIMARY KEY, v INT)", "INSERT INTO m VALUES (1, 5), (2, 6)",
		"CREATE PROCEDURE p1() SELECT v FROM m WHERE id = 1"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Unknown}, Results: true, Stmts: []target.Stmt{
		{Name: "sel", SQL: "SELECT v FROM m WHERE id = $1", Params: []int{0}},
		{Name: "call", SQL: "CALL p1()"},
	}}
	ss, err := tt.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	var out step.Outcome
	if !ss.Ready(ctx, &out) {
		t.Fatal(out.Err)
	}
	rt := func(stmts ...int) error {
		for _, i := range stmts {
			ss.Queue(i)
		}
		if err := ss.Send(); err != nil {
			return err
		}
		return ss.Receive()
	}
	ss.SetText(0, []byte("1"))
	if err := rt(0); err != nil || string(ss.Row(0)[0]) != "5" {
		t.Fatalf("before: %v %q", err, ss.Row(0))
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE m MODIFY v BIGINT"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE m SET v = 5000000000 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := rt(0); err != nil || string(ss.Row(0)[0]) != "5000000000" || ss.Int(0, 0) != 0 {
			t.Fatalf("after the ALTER, execution %d: %v %q %d", i+1, err, ss.Row(0), ss.Int(0, 0))
		}
	}
	// Bound at Queue: the second statement keeps its own value.
	ss.SetText(0, []byte("1"))
	ss.Queue(0)
	ss.SetText(0, []byte("2"))
	ss.Queue(0)
	if err := ss.Send(); err != nil {
		t.Fatal(err)
	}
	if err := ss.Receive(); err != nil || ss.Results() != 2 || string(ss.Row(1)[0]) != "6" {
		t.Errorf("two queued: %v %q", err, ss.Row(1))
	}
	if err := rt(1, 0); err != nil || ss.Results() != 2 || string(ss.Row(0)[0]) != "5000000000" {
		t.Errorf("CALL then a statement: %v (results %d)", err, ss.Results())
	}
	if err := ss.SendQuery([]byte("SELECT 3; LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE m")); err != nil {
		t.Fatal(err)
	}
	if err := ss.Receive(); err == nil || !strings.Contains(err.Error(), "LOAD DATA LOCAL INFILE") {
		t.Errorf("LOAD DATA LOCAL INFILE: %v", err)
	}
	if err := rt(0); err != nil {
		t.Errorf("after the refused LOAD DATA: %v", err)
	}
}

func TestErrorsHint(t *testing.T) {
	tt := &Target{}
	for code, want := range map[string]string{"1213": "--max-tries", "1205": "innodb_lock_wait_timeout", "1040": "max_connections", "1114": "free space", "2013": "error log", "1146": "MariaDB error number", "1461": "max_prepared_stmt_count"} {
		if got := tt.ErrorsHint(map[string]int64{code: 10, "1062": 1}); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q in it", code, got, want)
		}
	}
	if tt.ErrorsHint(nil) != "" {
		t.Error("no errors, no hint")
	}
}

func TestOptionFilePassword(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".my.cnf"), []byte("# mine\n[mysqld]\npassword=server\n[client]\nuser=me\npassword = \"s3 cret\"\n[mysql]\npassword=other\n"), 0o600)
	c, err := parseURL("mariadb://me@127.0.0.1/db", func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})
	if err != nil || c.Passwd != "s3 cret" {
		t.Errorf("password %q %v", c.Passwd, err)
	}
	c, _ = parseURL("mariadb://me@127.0.0.1/db", func(k string) string {
		return map[string]string{"HOME": home, PasswordEnv: "env"}[k]
	})
	if c.Passwd != "env" {
		t.Errorf("$%s first: %q", PasswordEnv, c.Passwd)
	}
}

// TestAdminTransactions: the server's count of COMMIT and ROLLBACK
// statements grows with another connection's.
func TestAdminTransactions(t *testing.T) {
	t.Parallel()
	tt, _ := sessionServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := tt.Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := tt.Admin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before, err := a.Transactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := b.Tx(ctx, target.TxOptions{}, func(tx target.Admin) error {
			_, err := tx.Exec(ctx, "UPDATE kv SET v = v WHERE id = 1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if after, err := a.Transactions(ctx); err != nil || after-before != 3 {
		t.Errorf("transactions grew by %d (%v), want 3", after-before, err)
	}
}

// TestDriverThreads: a MariaDB on this machine (managed, or reached on
// loopback) gets one driver thread per 4 cores, a remote one one per core.
func TestDriverThreads(t *testing.T) {
	local := max(1, runtime.NumCPU()/4)
	for _, c := range []struct {
		addr string
		want int
	}{
		{"127.0.0.1:3306", local},
		{"localhost:3306", local},
		{"[::1]:3306", local},
		{"192.0.2.10:3306", runtime.NumCPU()},
		{"db.example.com:3306", runtime.NumCPU()},
	} {
		tg := &Target{cfg: &mysql.Config{Addr: c.addr}}
		if got := tg.DriverThreads(64); got != c.want {
			t.Errorf("%s: %d driver threads, want %d", c.addr, got, c.want)
		}
	}
	if got := target.DriverThreads(&Target{srv: &Server{}, cfg: &mysql.Config{Addr: "192.0.2.10:3306"}}, 0, 64); got != local {
		t.Errorf("managed: %d driver threads, want %d", got, local)
	}
}

// TestLazySession: a session of more statements than target.MaxPrepared
// prepares only the one whose columns are read at connect, prepares each
// other one when it first runs, keeps the first MaxPrepared prepared and
// prepares the others each time (closing the previous one), so the server
// holds at most MaxPrepared + 1, gives each statement its own result, and
// reports a statement that cannot be prepared as that statement's error,
// the session going on.
func TestLazySession(t *testing.T) {
	t.Parallel()
	tt, _ := sessionServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := target.MaxPrepared*2 + 5
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Int4}, Results: true}
	for i := 0; i < n; i++ {
		spec.Stmts = append(spec.Stmts, target.Stmt{Name: fmt.Sprintf("s%d", i), SQL: fmt.Sprintf("SELECT %d + $1 AS v%d", i, i), Params: []int{0}})
	}
	spec.Stmts[7].Columns = true
	spec.Stmts[9].SQL = "SELECT v FROM no_such_table WHERE id = $1"
	s, err := tt.NewSession(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out step.Outcome
	if !s.Ready(ctx, &out) {
		t.Fatal(out.Err)
	}
	prepared := func() int {
		t.Helper()
		if err := s.SendQuery([]byte("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'")); err != nil {
			t.Fatal(err)
		}
		if err := s.Receive(); err != nil {
			t.Fatal(err)
		}
		k, _ := strconv.Atoi(string(s.Row(0)[1]))
		return k
	}
	if k := prepared(); k != 1 {
		t.Errorf("%d statements prepared at connect, want 1 (the one whose columns are read)", k)
	}
	if cols := s.Columns(7); len(cols) != 1 || cols[0] != "v7" {
		t.Errorf("columns of the pinned statement: %q", cols)
	}
	run := func(arg int, stmts ...int) error {
		t.Helper()
		s.SetInt(0, int64(arg))
		for _, i := range stmts {
			s.Queue(i)
		}
		if err := s.Send(); err != nil {
			return err
		}
		if err := s.Receive(); err != nil {
			return err
		}
		for k, i := range stmts {
			if got := s.Int(k, 0); s.Rows(k) != 1 || int(got) != i+arg {
				t.Errorf("statement %d: %d, want %d", i, got, i+arg)
			}
		}
		return nil
	}
	for i := 0; i < n; i++ {
		if i == 9 {
			continue
		}
		if err := run(1000, i); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	// The first MaxPrepared but 9 and 7 (pinned), the pinned one, and
	// the last one run of the others.
	if k := prepared(); k != target.MaxPrepared {
		t.Errorf("%d statements prepared after all ran once, want %d", k, target.MaxPrepared)
	}
	m := target.MaxPrepared
	if err := run(5, 3, 3+m, 3+2*m, 3, 7); err != nil {
		t.Fatal(err)
	}
	if err := run(0, 9); err == nil || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("a statement that cannot be prepared: %v", err)
	}
	if s.InTx() {
		if err := s.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(3, 12, 12+m, 4+m); err != nil {
		t.Fatalf("after the failed statement: %v", err)
	}
	if k := prepared(); k > target.MaxPrepared+1 {
		t.Errorf("%d statements prepared, more than %d", k, target.MaxPrepared+1)
	}
}
