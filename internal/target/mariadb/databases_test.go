package mariadb

import (
	"context"
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
