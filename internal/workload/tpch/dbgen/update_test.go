package dbgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// testdata/updates-sf1 holds the head of update sets 1, 75 and 150 at SF 1
// from the TPC's reference data (tpch-kit ref_data/1, made by dbgen -s 1 -U n
// -S n -i 100 -d 100): the first of 100 insert segments (15 orders and
// their lines) and the first 16 keys of the delete file.
func TestUpdateSetsMatchReference(t *testing.T) {
	g := New(1, TBL)
	for _, upd := range []int64{1, 75, 150} {
		t.Run(fmt.Sprint(upd), func(t *testing.T) {
			dir := filepath.Join("testdata", "updates-sf1")
			for _, tb := range []Table{Orders, Lineitem} {
				want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s.tbl.u%d", tb, upd)))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := g.AppendUpdate(nil, tb, upd, 0, 15)
				compareLines(t, fmt.Sprintf("%s.tbl.u%d", tb, upd), got, want)
			}
			want, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("delete.u%d", upd)))
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, k := range DeleteKeys(1, upd)[:16] {
				got = append(strconv.AppendInt(got, k, 10), "|\n"...)
			}
			compareLines(t, fmt.Sprintf("delete.u%d", upd), got, want)
		})
	}
	if n := RefreshOrders(1); n != 1500 {
		t.Errorf("RefreshOrders(1) = %d, want 1500", n)
	}
	if n := RefreshOrders(0.01); n != 10 {
		t.Errorf("RefreshOrders(0.01) = %d, want 10 (dbgen's integer arithmetic)", n)
	}
}

// Chunks generated separately and concatenated are the whole table, for
// every table and for chunk boundaries inside a row's draws.
func TestChunksConcatenate(t *testing.T) {
	g := New(0.01, COPY)
	for _, tb := range Tables() {
		whole, rows := g.Append(nil, tb, 0, Units(tb, 0.01))
		var parts []byte
		var n int64
		units := Units(tb, 0.01)
		for first := int64(0); first < units; first += 7 {
			var r int64
			parts, r = g.Append(parts, tb, first, min(7, units-first))
			n += r
		}
		if !bytes.Equal(whole, parts) || n != rows {
			t.Errorf("%s: chunks of 7 units differ from the whole table (%d vs %d rows)", tb, n, rows)
		}
		if bytes.Contains(whole, []byte("|\n")) {
			t.Errorf("%s: COPY format has a trailing separator", tb)
		}
	}
}
