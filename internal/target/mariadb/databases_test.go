package mariadb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDatabases: an experiment's databases made, marked, copied (rows and
// indexes) and dropped only when tunebench made them.
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
	d := Databases{Open: s.Open}
	const mark = "tunebench experiment"
	if err := d.Create(ctx, "exp_template", mark+" (loading)"); err != nil {
		t.Fatal(err)
	}
	if ok, m, err := d.State(ctx, "exp_template"); err != nil || !ok || m != mark+" (loading)" {
		t.Errorf("state %v %q %v", ok, m, err)
	}
	db, err := s.Open("exp_template")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE a (id int PRIMARY KEY, v varchar(20), KEY v_idx (v)) ENGINE=InnoDB",
		"INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'it''s')"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if err := d.Mark(ctx, "exp_template", mark+" data: x"); err != nil {
		t.Fatal(err)
	}
	if err := d.Copy(ctx, "exp", "exp_template"); err != nil {
		t.Fatal(err)
	}
	if err := d.Copy(ctx, "exp", "exp_template"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a copy onto an existing database: %v", err)
	}
	db, err = s.Open("exp")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var idx string
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM a").Scan(&n); err != nil || n != 3 {
		t.Errorf("copied rows %d %v", n, err)
	}
	if err := db.QueryRowContext(ctx, "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='exp' AND INDEX_NAME='v_idx'").Scan(&idx); err != nil {
		t.Errorf("copied index: %v", err)
	}
	db.Close()
	if err := d.Mark(ctx, "exp", mark+" copy"); err != nil {
		t.Fatal(err)
	}
	if err := d.DropOwn(ctx, "exp", mark); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := d.State(ctx, "exp"); ok {
		t.Errorf("exp not dropped")
	}
	if err := d.DropOwn(ctx, "no_such_db", mark); err != nil {
		t.Errorf("a missing database: %v", err)
	}
	admin, _ := s.Open("")
	admin.ExecContext(ctx, "CREATE DATABASE by_hand")
	admin.Close()
	if err := d.DropOwn(ctx, "by_hand", mark); err == nil || !strings.Contains(err.Error(), "tunebench did not make it") {
		t.Errorf("a database made by hand: %v", err)
	}
	if err := d.Create(ctx, "Bad-Name", mark); err == nil {
		t.Errorf("a bad name accepted")
	}
}

func TestDatabasesProbe(t *testing.T) {
	needMariaDB(t)
	ctx := context.Background()
	s, err := Start(ctx, Options{Dir: serverDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	db, _ := s.Open("")
	defer db.Close()
	run := func(q string) {
		_, err := db.ExecContext(ctx, q)
		t.Logf("%s => %v", q, err)
	}
	show := func(q string) {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Logf("%s => %v", q, err)
			return
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			v := make([]any, len(cols))
			p := make([]any, len(cols))
			for i := range v {
				p[i] = &v[i]
			}
			rows.Scan(p...)
			var out []string
			for _, x := range v {
				if b, ok := x.([]byte); ok {
					out = append(out, string(b))
				} else {
					out = append(out, fmt.Sprint(x))
				}
			}
			t.Logf("%s: %s", q, strings.Join(out, " | "))
		}
		rows.Close()
	}
	show("SELECT VERSION(), @@sql_mode")
	run("CREATE DATABASE p")
	run("CREATE TABLE p.par (id int primary key)")
	run("CREATE TABLE p.ch (id int primary key, pid int, KEY (pid), CONSTRAINT fk1 FOREIGN KEY (pid) REFERENCES par(id))")
	run("CREATE DATABASE q")
	run("CREATE TABLE q.par LIKE p.par")
	run("CREATE TABLE q.ch LIKE p.ch")
	show("SHOW CREATE TABLE q.ch")
	run("CREATE TABLE p.g (a int, b int AS (a*2) VIRTUAL, c int AS (a+1) PERSISTENT, h int INVISIBLE DEFAULT 7)")
	run("INSERT INTO p.g (a, h) VALUES (1, 100)")
	run("CREATE TABLE q.g LIKE p.g")
	run("INSERT INTO q.g SELECT * FROM p.g")
	show("SHOW WARNINGS")
	show("SELECT a, b, c, h FROM q.g")
	show("SELECT COLUMN_NAME, IS_GENERATED, EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='p' AND TABLE_NAME='g' ORDER BY ORDINAL_POSITION")
	run("CREATE TABLE p.ai (id int auto_increment primary key)")
	run("INSERT INTO p.ai VALUES (5)")
	run("SET SESSION sql_mode='NO_AUTO_VALUE_ON_ZERO'")
	run("INSERT INTO p.ai VALUES (0)")
	run("SET SESSION sql_mode=DEFAULT")
	show("SELECT id FROM p.ai")
	run("CREATE TABLE p.sv (x int) WITH SYSTEM VERSIONING")
	run("CREATE SEQUENCE p.seq")
	run("CREATE VIEW p.v AS SELECT 1")
	show("SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA='p' ORDER BY TABLE_NAME")
	run("ALTER DATABASE p COMMENT '" + strings.Repeat("x", 1025) + "'")
	show("SELECT LENGTH(SCHEMA_COMMENT) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='p'")
	run("ALTER DATABASE p COMMENT 'emoji 😀 é'")
	show("SELECT SCHEMA_COMMENT, HEX(SCHEMA_COMMENT) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='p'")
	run(`ALTER DATABASE p COMMENT 'a\\b ''q'' "d" \n'`)
	show("SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='p'")
	show("SELECT COLUMN_TYPE, CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='information_schema' AND TABLE_NAME='SCHEMATA' AND COLUMN_NAME='SCHEMA_COMMENT'")
	run("CREATE TRIGGER p.tr BEFORE INSERT ON p.par FOR EACH ROW SET NEW.id = NEW.id")
	show("SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA='p'")
}
