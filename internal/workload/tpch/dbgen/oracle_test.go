package dbgen

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

// The oracle is tpchgen-cli, an independent generator whose output is
// byte-identical to the TPC's dbgen (testutil.Oracle finds it).
func oracle(t *testing.T) string {
	t.Helper()
	return filepath.Join(testutil.Oracle(t), "bin", "tpchgen-cli")
}

func runOracle(t *testing.T, sf string) string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(oracle(t), "-s", sf, "--output-dir="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tpchgen-cli -s %s: %v\n%s", sf, err, b)
	}
	return out
}

// Every table at SF 0.01, whole, line for line.
func TestTablesMatchOracle(t *testing.T) {
	dir := runOracle(t, "0.01")
	g := New(0.01, TBL)
	for _, tb := range Tables() {
		want, err := os.ReadFile(filepath.Join(dir, tb.String()+".tbl"))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := g.Append(nil, tb, 0, Units(tb, 0.01))
		compareLines(t, tb.String(), got, want)
	}
}

// Every table at SF 0.1, by SHA-256, generated in chunks as the loader does.
func TestChecksumsMatchOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("SF 0.1 in -short mode")
	}
	dir := runOracle(t, "0.1")
	g := New(0.1, TBL)
	for _, tb := range Tables() {
		f, err := os.Open(filepath.Join(dir, tb.String()+".tbl"))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		want := hex.EncodeToString(h.Sum(nil))
		h.Reset()
		var buf []byte
		units := Units(tb, 0.1)
		for first := int64(0); first < units; first += 10_000 {
			buf, _ = g.Append(buf[:0], tb, first, min(10_000, units-first))
			h.Write(buf)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("%s at SF 0.1: sha256 %s, oracle %s", tb, short(got), short(want))
		}
	}
}

func short(h string) string { return strings.ToUpper(h[:12]) }
