package mariadb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

func globalValue(t *testing.T, s *Server, name string) string {
	t.Helper()
	db, err := s.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := Catalog(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return cat[name].Value
}

// TestSettings: values checked against the catalogue before anything
// changes, dynamic ones set and read back, a read-only one through the
// settings file and a restart, all restored to the values before (not the
// compiled defaults), and a killed holder's settings restored by the next
// start.
func TestSettings(t *testing.T) {
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
	me := Holder("test")

	// A value that is not the default, to tell "restored" from "reset".
	if _, err := s.Apply(ctx, map[string]string{"innodb_io_capacity": "300"}, &server.Holder{PID: 1, What: "setup"}); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.journalPath()) // the setup's change is the machine's own now

	for _, c := range []struct {
		name, value, want string
	}{
		{"innodb_io_capacty", "500", "did you mean innodb_io_capacity?"},
		{"max_connections", "999999", "is between 10 and 100000"},
		{"join_buffer_size", "262145", "not a multiple of its block size 128"},
		{"tx_isolation", "bogus", "use one of: READ-UNCOMMITTED"},
		{"innodb_io_capacity", "lots", "takes an integer"},
	} {
		_, err := s.Apply(ctx, map[string]string{c.name: c.value, "max_heap_table_size": "32M"}, me)
		if err == nil || !strings.Contains(err.Error()+" "+errs.HintOf(err), c.want) {
			t.Errorf("%s=%s: %v (hint %q), want %q", c.name, c.value, err, errs.HintOf(err), c.want)
		}
	}
	if v := globalValue(t, s, "max_heap_table_size"); v == "33554432" {
		t.Errorf("a refused Apply changed max_heap_table_size")
	}

	before := map[string]string{}
	for _, n := range []string{"innodb_io_capacity", "max_heap_table_size", "tx_isolation", "innodb_sort_buffer_size"} {
		before[n] = globalValue(t, s, n)
	}
	if before["innodb_io_capacity"] != "300" {
		t.Fatalf("setup: innodb_io_capacity %s", before["innodb_io_capacity"])
	}
	newThreads := "2097152" // innodb_sort_buffer_size: read-only, set at start
	if before["innodb_sort_buffer_size"] == newThreads {
		newThreads = "4194304"
	}
	db, err := s.Open("")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := Catalog(ctx, db)
	db.Close()
	if err != nil || !cat["innodb_sort_buffer_size"].ReadOnly {
		t.Fatalf("innodb_sort_buffer_size is not read-only here (%v): choose another read-only variable for this test", err)
	}
	as, err := s.Apply(ctx, map[string]string{"innodb_io_capacity": "500", "max_heap_table_size": "32M",
		"tx_isolation": "serializable", "innodb_sort_buffer_size": newThreads}, me)
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"innodb_io_capacity": "500", "max_heap_table_size": "33554432",
		"tx_isolation": "SERIALIZABLE", "innodb_sort_buffer_size": newThreads} {
		if got := globalValue(t, s, n); got != want {
			t.Errorf("%s = %s, want %s", n, got, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, settingsFile)); !strings.Contains(string(b), "innodb_sort_buffer_size="+newThreads) {
		t.Errorf("settings file:\n%s", b)
	}
	if err := s.Restore(ctx, as); err != nil {
		t.Fatal(err)
	}
	for n, want := range before {
		if got := globalValue(t, s, n); got != want {
			t.Errorf("after restore %s = %s, want %s", n, got, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, settingsFile)); strings.Contains(string(b), "innodb_sort_buffer_size") {
		t.Errorf("settings file after restore:\n%s", b)
	}
	if _, err := os.Stat(s.journalPath()); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}

	// A killed run's settings: the next start restores them.
	if _, err := s.Apply(ctx, map[string]string{"innodb_io_capacity": "700"}, &server.Holder{PID: testutil.DeadPID(t), What: "killed"}); err != nil {
		t.Fatal(err)
	}
	s2, err := Start(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s2.Restored) != 1 || s2.Restored[0].Name != "innodb_io_capacity" || globalValue(t, s2, "innodb_io_capacity") != "300" {
		t.Errorf("leftovers: %+v, innodb_io_capacity %s", s2.Restored, globalValue(t, s2, "innodb_io_capacity"))
	}
}

func TestCanonicalIntegers(t *testing.T) {
	v := Variable{Name: "max_join_size", Type: "BIGINT UNSIGNED", MinText: "1", MaxText: "18446744073709551615"}
	for in, want := range map[string]string{"18446744073709551615": "18446744073709551615", "2G": "2147483648", "  7 ": "7"} {
		if got, err := canonical(v, in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := canonical(v, "18446744073709551616"); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("2^64: %v", err)
	}
	signed := Variable{Name: "x", Type: "INT", MinText: "-10", MaxText: "10", Block: 2}
	if got, err := canonical(signed, "-4"); err != nil || got != "-4" {
		t.Errorf("-4: %q %v", got, err)
	}
	if _, err := canonical(signed, "3"); err == nil || !strings.Contains(errs.HintOf(err), "round it down to 2") {
		t.Errorf("block: %v %q", err, errs.HintOf(err))
	}
}
