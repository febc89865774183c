package cli_test

import (
	"database/sql"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// A damaged results store is refused before the benchmark runs (issue 16,
// item 6: it was accepted, the whole run ran, and saving failed with
// "database disk image is malformed", the result lost).
func TestDamagedStoreRefusedBeforeRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	src := reportStore(t)
	// A compact copy with every page in the main file (the store keeps
	// recent pages in its write-ahead log).
	whole := tempPath(t, "whole.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("VACUUM INTO ?", whole); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 5*4096 {
		t.Fatalf("the fixture store is only %d bytes", len(b))
	}
	// As dd if=/dev/urandom of=copy.db bs=4096 seek=2 count=3 conv=notrunc.
	r := rand.New(rand.NewPCG(1, 2))
	for i := 2 * 4096; i < 5*4096; i++ {
		b[i] = byte(r.UintN(256))
	}
	damaged := tempPath(t, "copy.db")
	if err := os.WriteFile(damaged, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := pg.Server(t)
	res := h.must(2, "run", "tpcb", "--server-dir", srv.Dir(), "-d", "nodb", "-T", "2s", "--results", damaged)
	if !strings.Contains(res.stderr, "is damaged") || !strings.Contains(res.stderr, "nothing was run") || strings.Contains(res.stdout, "tps") {
		t.Errorf("a run with a damaged store:\n%s", res)
	}
	// The undamaged store is accepted as before.
	h.must(0, "results", "list", "--results", src)
}
