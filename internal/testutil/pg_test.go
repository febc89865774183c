package testutil_test

import (
	"context"
	"os"
	"testing"

	"github.com/tunebench/tunebench/internal/server"
	"github.com/tunebench/tunebench/internal/testutil"
)

var shared = testutil.Shared{Options: func(o *server.Options) {
	o.Settings = []server.Setting{{Name: "work_mem", Value: "16MB"}}
}}

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

func TestSharedServerIsShared(t *testing.T) {
	a := shared.Server(t)
	b := shared.Server(t)
	if a != b {
		t.Fatal("Shared.Server returned two servers")
	}
	conn := testutil.Connect(t, a)
	var wm string
	if err := conn.QueryRow(context.Background(), "SHOW work_mem").Scan(&wm); err != nil {
		t.Fatal(err)
	}
	if wm != "16MB" {
		t.Errorf("work_mem = %s, want the shared options' 16MB", wm)
	}
}

func TestCreateDBIsolates(t *testing.T) {
	srv := shared.Server(t)
	t.Run("a", func(t *testing.T) {
		t.Parallel()
		db := testutil.CreateDB(t, srv)
		conn := testutil.ConnectDB(t, srv, db)
		if _, err := conn.Exec(context.Background(), "CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("b", func(t *testing.T) {
		t.Parallel()
		db := testutil.CreateDB(t, srv)
		conn := testutil.ConnectDB(t, srv, db)
		if _, err := conn.Exec(context.Background(), "CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "1": true, "false": false, "0": false, "yes": true} {
		t.Setenv("CI", v)
		if got := testutil.InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v", v, got)
		}
	}
}

func TestTempDirTraversable(t *testing.T) {
	dir, remove, err := testutil.TempDir("tb-tu-")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("%v %v", st.Mode(), err)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("not removed: %v", err)
	}
}
