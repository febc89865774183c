package mariadb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
	"github.com/tunebench/tunebench/internal/target"
)

// TestTarget: a MariaDB reached by a mariadb:// connection string (the
// password from $MYSQL_PWD) and by its managed directory: settings
// checked, applied, verified and restored through target.Settings, a
// read-only one refused where tunebench cannot restart the server, the
// status counters sampled as rates.
func TestTarget(t *testing.T) {
	needMariaDB(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := serverDir(t)
	s, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })

	d := Driver{}
	dsn := fmt.Sprintf("mariadb://%s@127.0.0.1:%d/mysql", User, s.Port())
	if err := d.Check(target.Spec{DSN: strings.Replace(dsn, User+"@", User+":secret@", 1)}); err == nil || !strings.Contains(errs.HintOf(err), PasswordEnv) {
		t.Errorf("a password in the connection string: %v", err)
	}
	if !d.Accepts(target.Spec{DSN: dsn}) || !d.Accepts(target.Spec{ServerDir: dir}) || d.Accepts(target.Spec{DSN: "host=/tmp"}) || d.Accepts(target.Spec{ServerDir: t.TempDir()}) {
		t.Errorf("Accepts")
	}
	rd := redact.New()
	getenv := func(k string) string {
		if k == PasswordEnv {
			return s.password
		}
		return ""
	}
	tt, err := d.Open(ctx, target.Spec{DSN: dsn, Getenv: getenv, Redactor: rd})
	if err != nil {
		t.Fatal(err)
	}
	if tt.Dialect() != "mariadb" || tt.Remote() || strings.Contains(tt.Describe(), s.password) || tt.Database() != "mysql" {
		t.Errorf("target: %s %s remote %v", tt.Dialect(), tt.Describe(), tt.Remote())
	}
	// A wrong password and a server that is not there: one clear error each.
	bad, _ := d.Open(ctx, target.Spec{DSN: dsn, Getenv: func(string) string { return "wrong" }})
	if err := bad.Settings().Check(ctx, []target.Setting{{Name: "innodb_io_capacity", Value: "300"}}); err == nil ||
		!strings.Contains(err.Error(), "MariaDB refused the login") || !strings.Contains(errs.HintOf(err), PasswordEnv) || errs.KindOf(err) != errs.KindConnect {
		t.Errorf("wrong password: %v (hint %q)", err, errs.HintOf(err))
	}
	down, _ := d.Open(ctx, target.Spec{DSN: "mariadb://x@127.0.0.1:1/"})
	if _, _, err := down.Databases().State(ctx, "x"); err == nil || !strings.Contains(err.Error(), "cannot reach MariaDB") || !strings.Contains(errs.HintOf(err), "is the server running") {
		t.Errorf("server down: %v (hint %q)", err, errs.HintOf(err))
	}
	if got := rd.String("pw " + s.password); strings.Contains(got, s.password) {
		t.Errorf("the password is not redacted: %s", got)
	}
	before := globalValue(t, s, "innodb_io_capacity")
	st := tt.Settings()
	if err := st.Check(ctx, []target.Setting{{Name: "innodb_sort_buffer_size", Value: "2M"}}); err == nil || !strings.Contains(err.Error(), "read-only while MariaDB runs") {
		t.Errorf("a read-only variable on a connection string: %v", err)
	}
	ch, err := st.Apply(ctx, []target.Setting{{Name: "innodb_io_capacity", Value: "1234"}})
	if err != nil {
		t.Fatal(err)
	}
	if globalValue(t, s, "innodb_io_capacity") != "1234" || ch.Values()["innodb_io_capacity"] != "1234" || ch.Restarted() {
		t.Errorf("applied: %v", ch.Values())
	}
	if err := ch.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if got := globalValue(t, s, "innodb_io_capacity"); got != before {
		t.Errorf("restored to %s, was %s", got, before)
	}

	// Samplers: rates of the status counters.
	var notes []string
	specs, err := tt.Samplers(ctx, target.HostMetrics{}, func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
	if err != nil || len(specs) != 3 || specs[0].Sampler.Name() != "mariadb status" || specs[1].Sampler.Name() != "mariadb-processes" {
		t.Fatalf("samplers %v %v", specs, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "performance_schema is off") {
		t.Errorf("notes %q", notes)
	}
	if pts, err := specs[1].Sampler.Sample(ctx, time.Now()); err != nil || len(pts) == 0 || !strings.HasPrefix(pts[0].Series, "mariadb.proc_") {
		t.Errorf("the server's process: %v %v", pts, err)
	}
	smp := specs[0].Sampler
	t0 := time.Now()
	if _, err := smp.Sample(ctx, t0); err != nil {
		t.Fatal(err)
	}
	db, _ := s.Open("")
	for i := 0; i < 20; i++ {
		db.ExecContext(ctx, "COMMIT")
	}
	db.Close()
	pts, err := smp.Sample(ctx, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	rates := map[string]float64{}
	for _, p := range pts {
		rates[p.Series] = p.V
	}
	if rates["mariadb.commits"] < 20 {
		t.Errorf("commit rate %v (points %v)", rates["mariadb.commits"], pts)
	}
	tt.Close(ctx)

	// The managed directory, owned: a read-only variable through a
	// restart, kept until Close.
	mt, err := d.Open(ctx, target.Spec{ServerDir: dir, Own: true})
	if err != nil {
		t.Fatal(err)
	}
	sortBefore := globalValue(t, s, "innodb_sort_buffer_size")
	ch, err = mt.Settings().Apply(ctx, []target.Setting{{Name: "innodb_sort_buffer_size", Value: "2M"}})
	if err != nil {
		t.Fatal(err)
	}
	if !ch.Restarted() || globalValue(t, s, "innodb_sort_buffer_size") != "2097152" {
		t.Errorf("read-only through a restart: restarted %v, value %s", ch.Restarted(), globalValue(t, s, "innodb_sort_buffer_size"))
	}
	if err := ch.Restore(ctx); err != nil || globalValue(t, s, "innodb_sort_buffer_size") != "2097152" {
		t.Errorf("an owned target keeps its settings until Close: %v", err)
	}
	if err := mt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := globalValue(t, s, "innodb_sort_buffer_size"); got != sortBefore {
		t.Errorf("after Close %s, was %s", got, sortBefore)
	}
	if dirOK, ok := mt.ScratchDir("x"); !ok || !strings.HasPrefix(dirOK, dir) {
		t.Errorf("scratch dir %s", dirOK)
	}
	if env := mt.Env(ctx, "test"); env == nil || env.DataDir == nil {
		t.Errorf("env %+v", env)
	}
}

// TestWaitSampler: with performance_schema on (a read-only variable: the
// settings file and a restart), the samplers include the wait events, as
// the time waited per event per second.
func TestWaitSampler(t *testing.T) {
	needMariaDB(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := serverDir(t)
	s, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	tt, err := Driver{}.Open(ctx, target.Spec{ServerDir: dir, Own: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tt.Close(ctx)
	if _, err := tt.Settings().Apply(ctx, []target.Setting{{Name: "performance_schema", Value: "ON"}}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	specs, err := tt.Samplers(ctx, target.HostMetrics{Source: target.HostNone}, func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) })
	if err != nil || len(specs) != 2 || specs[1].Sampler.Name() != "mariadb waits" || len(notes) != 0 {
		t.Fatalf("samplers %v %v, notes %q", specs, err, notes)
	}
	w := specs[1].Sampler
	t0 := time.Now()
	if _, err := w.Sample(ctx, t0); err != nil {
		t.Fatal(err)
	}
	db, _ := s.Open(DefaultDatabase)
	defer db.Close()
	for _, q := range []string{"CREATE TABLE w (id INT PRIMARY KEY, v TEXT)", "INSERT INTO w SELECT seq, REPEAT('x', 100) FROM seq_1_to_20000"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	pts, err := w.Sample(ctx, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waited := 0.0
	for _, p := range pts {
		if !strings.HasPrefix(p.Series, "wait.") || strings.HasPrefix(p.Series, "wait.wait/") || p.V < 0 {
			t.Errorf("point %+v", p)
		}
		waited += p.V
	}
	if len(pts) == 0 || waited <= 0 {
		t.Errorf("no time waited: %v", pts)
	}
}

// TestConnLost: the errors a read after a restart meets are lost
// connections (read again on a new one), a statement's error is not.
func TestConnLost(t *testing.T) {
	var tt Target
	for _, err := range []error{sql.ErrConnDone, fmt.Errorf("reading: %w", sql.ErrConnDone), driver.ErrBadConn, io.ErrUnexpectedEOF} {
		if !tt.ConnLost(err) {
			t.Errorf("%v: not a lost connection", err)
		}
	}
	if tt.ConnLost(&mysql.MySQLError{Number: 1146, Message: "Table 'x' doesn't exist"}) {
		t.Error("a missing table is a lost connection")
	}
}
