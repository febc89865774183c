package mariadb

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/target"
)

var _ target.Databases = Databases{}

// TestDatabases: an experiment's databases made, marked, copied (rows,
// indexes, foreign keys, generated and invisible columns, counters,
// sequences) and dropped only when tunebench made them; what a copy cannot
// take is refused before anything is made, and an interrupted copy leaves
// nothing behind.
func TestDatabases(t *testing.T) {
	needMariaDB(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Dir: serverDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	admin, err := s.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx) // one session: its settings hold
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	one := func(q string, args ...any) string {
		t.Helper()
		var v sql.NullString
		if err := conn.QueryRowContext(ctx, q, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return v.String
	}
	usage := func(what string, err error, want string) {
		t.Helper()
		if err == nil || errs.KindOf(err) != errs.KindUsage || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (kind %v), want a usage error with %q", what, err, errs.KindOf(err), want)
		}
	}
	d := Databases{Open: s.Open}
	const mark = "tunebench experiment"

	// The template: made, loaded, marked.
	if err := d.Create(ctx, "exp_template", mark+" (loading)"); err != nil {
		t.Fatal(err)
	}
	if ok, m, err := d.State(ctx, "exp_template"); err != nil || !ok || m != mark+" (loading)" {
		t.Errorf("state %v %q %v", ok, m, err)
	}
	exec("CREATE TABLE exp_template.a (id int PRIMARY KEY, v varchar(20), KEY v_idx (v)) ENGINE=InnoDB",
		"INSERT INTO exp_template.a VALUES (1, 'x'), (2, 'y'), (3, 'it''s')",
		// b sorts before its parent c: the order of the copy does not matter.
		"CREATE TABLE exp_template.c (id int AUTO_INCREMENT PRIMARY KEY, n int, twice int AS (n*2) VIRTUAL, plus int AS (n+1) PERSISTENT, h int INVISIBLE DEFAULT 7)",
		"SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO')",
		"INSERT INTO exp_template.c (id, n, h) VALUES (0, 10, 70), (5, 20, 80), (40, 30, 90)",
		"DELETE FROM exp_template.c WHERE id = 40", // the counter stays at 41
		"CREATE TABLE exp_template.b (id int PRIMARY KEY, cid int, KEY (cid), CONSTRAINT b_c FOREIGN KEY (cid) REFERENCES c (id) ON DELETE CASCADE)",
		"INSERT INTO exp_template.b VALUES (1, 0), (2, 5)",
		"CREATE SEQUENCE exp_template.s START WITH 100",
	)
	const data = mark + ` data: w {"path":"C:\\x","name":"it's"}`
	if err := d.Mark(ctx, "exp_template", data); err != nil {
		t.Fatal(err)
	}
	if _, m, _ := d.State(ctx, "exp_template"); m != data {
		t.Errorf("marker %q, want %q", m, data)
	}
	if err := d.Seal(ctx, "exp_template"); err != nil {
		t.Fatal(err)
	}

	// The copy.
	t0 := time.Now()
	if err := d.Copy(ctx, "exp", "exp_template"); err != nil {
		t.Fatal(err)
	}
	t.Logf("copied in %s", time.Since(t0).Round(time.Millisecond))
	if ok, m, err := d.State(ctx, "exp"); err != nil || !ok || m != data+" (copying)" {
		t.Errorf("copy's state before its Mark: %v %q %v", ok, m, err)
	}
	if got := one("SELECT GROUP_CONCAT(id, v ORDER BY id) FROM exp.a"); got != "1x,2y,3it's" {
		t.Errorf("copied rows of a: %q", got)
	}
	rows, err := conn.QueryContext(ctx, "SHOW INDEX FROM exp.a")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	indexes := map[string]bool{}
	for rows.Next() {
		v := make([]sql.RawBytes, len(cols))
		p := make([]any, len(v))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatal(err)
		}
		indexes[string(v[2])] = true // Key_name
	}
	rows.Close()
	if !indexes["PRIMARY"] || !indexes["v_idx"] {
		t.Errorf("copied indexes of a: %v", indexes)
	}
	if got := one("SELECT GROUP_CONCAT(id, ':', n, ':', twice, ':', plus, ':', h ORDER BY id) FROM exp.c"); got != "0:10:20:11:70,5:20:40:21:80" {
		t.Errorf("copied rows of c (generated and invisible columns, id 0): %q", got)
	}
	if got := one("SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'exp' AND TABLE_NAME = 'c'"); got != "41" {
		t.Errorf("copied AUTO_INCREMENT of c: %s", got)
	}
	if got := one(`SELECT CONCAT(UNIQUE_CONSTRAINT_SCHEMA, '.', REFERENCED_TABLE_NAME, ' ', DELETE_RULE) FROM information_schema.REFERENTIAL_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = 'exp' AND CONSTRAINT_NAME = 'b_c'`); got != "exp.c CASCADE" {
		t.Errorf("copied foreign key: %q", got)
	}
	exec("DELETE FROM exp.c WHERE id = 5")
	if got := one("SELECT GROUP_CONCAT(id) FROM exp.b"); got != "1" {
		t.Errorf("the copied foreign key does not cascade: b has %s", got)
	}
	if got := one("SELECT GROUP_CONCAT(id) FROM exp_template.b"); got != "1,2" {
		t.Errorf("the template changed with its copy: b has %s", got)
	}
	if got := one("SELECT NEXTVAL(exp.s) >= 100"); got != "1" {
		t.Errorf("copied sequence: NEXTVAL >= 100 is %s", got)
	}
	if got := one("SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'exp'"); got != one("SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'exp_template'") {
		t.Errorf("copy's character set %s", got)
	}
	if err := d.Mark(ctx, "exp", mark+" copy"); err != nil {
		t.Fatal(err)
	}
	usage("a copy onto an existing database", d.Copy(ctx, "exp", "exp_template"), "exists")
	usage("a copy of a missing template", d.Copy(ctx, "exp2", "no_template"), "no template database no_template")

	// A session left in a transaction on the copy does not hold its drop.
	held, err := s.Open("exp")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	tx, err := held.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT * FROM a"); err != nil {
		t.Fatal(err)
	}
	if err := d.DropOwn(ctx, "exp", mark); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if ok, _, _ := d.State(ctx, "exp"); ok {
		t.Errorf("exp not dropped")
	}
	if err := d.DropOwn(ctx, "no_such_db", mark); err != nil {
		t.Errorf("a missing database: %v", err)
	}
	exec("CREATE DATABASE by_hand", "CREATE DATABASE wrong_mark COMMENT 'mine'")
	usage("a database made by hand", d.DropOwn(ctx, "by_hand", mark), "database by_hand exists and tunebench did not make it")
	usage("a database of another comment", d.DropOwn(ctx, "wrong_mark", mark), "tunebench did not make it")
	if ok, _, _ := d.State(ctx, "by_hand"); !ok {
		t.Errorf("by_hand dropped")
	}
	// The name is compared exactly (the server's names are case-sensitive).
	exec("CREATE DATABASE EXP COMMENT 'tunebench experiment copy'")
	if ok, _, err := d.State(ctx, "exp"); ok || err != nil {
		t.Errorf("EXP taken for exp: %v %v", ok, err)
	}
	usage("a bad name", d.Create(ctx, "Bad-Name", mark), "bad database name")
	usage("a long marker", d.Create(ctx, "long", strings.Repeat("x", 1025)), "at most 1024")
	usage("an emoji", d.Mark(ctx, "exp_template", mark+" 😀"), "cannot keep")

	// A template with a view is refused before anything is made.
	if err := d.Create(ctx, "viewy", mark); err != nil {
		t.Fatal(err)
	}
	exec("CREATE TABLE viewy.t (n int)", "CREATE VIEW viewy.v AS SELECT n FROM viewy.t",
		"CREATE TRIGGER viewy.tr BEFORE INSERT ON viewy.t FOR EACH ROW SET NEW.n = NEW.n + 1")
	usage("a template with a view", d.Copy(ctx, "viewy_copy", "viewy"), "has trigger tr, view v, which a MariaDB copy does not copy")
	if ok, _, _ := d.State(ctx, "viewy_copy"); ok {
		t.Errorf("a refused copy was made")
	}

	// An interrupted copy is dropped: the template's table is locked, so
	// the copy waits in CREATE TABLE ... LIKE until its context ends.
	// (The copying session is killed first: with only its connection
	// closed, a long INSERT ... SELECT would run to its end on the server
	// and hold the DROP as long.)
	lock, err := admin.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "LOCK TABLES exp_template.a WRITE"); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	done := make(chan error, 1)
	go func() { done <- d.Copy(cctx, "exp", "exp_template") }()
	for waiting, until := "", time.Now().Add(30*time.Second); waiting == ""; {
		if time.Now().After(until) {
			t.Fatal("the copy does not wait for the locked table")
		}
		time.Sleep(20 * time.Millisecond)
		admin.QueryRowContext(ctx, "SELECT COALESCE(MAX(INFO), '') FROM information_schema.PROCESSLIST WHERE INFO LIKE 'CREATE TABLE `exp`.`a` LIKE%'").Scan(&waiting)
	}
	t0 = time.Now()
	ccancel()
	select {
	case err := <-done:
		if errs.KindOf(err) != errs.KindInterrupted {
			t.Errorf("an interrupted copy: %v (kind %v)", err, errs.KindOf(err))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an interrupted copy did not return")
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("an interrupted copy took %s to return", took)
	}
	if ok, _, _ := d.State(ctx, "exp"); ok {
		t.Errorf("an interrupted copy was left")
	}
	if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	if err := d.Copy(ctx, "exp", "exp_template"); err != nil {
		t.Errorf("a copy after an interrupted one: %v", err)
	}
}
