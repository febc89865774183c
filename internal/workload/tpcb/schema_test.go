package tpcb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCreateStatementsAidType(t *testing.T) {
	for _, tc := range []struct {
		scale int
		want  string
	}{
		{1, "int"}, {19999, "int"}, {BigintScale, "bigint"}, {BigintScale + 1, "bigint"},
	} {
		for _, parts := range []int{0, 4} {
			stmts := createStatements(tc.scale, 100, parts, "range")
			var hist, acc string
			for _, s := range stmts {
				switch {
				case strings.HasPrefix(s, "create table pgbench_history "):
					hist = s
				case strings.HasPrefix(s, "create table pgbench_accounts "):
					acc = s
				}
			}
			if !strings.Contains(hist, "aid "+tc.want+",") {
				t.Errorf("scale %d partitions %d: history aid is not %s: %s", tc.scale, parts, tc.want, hist)
			}
			if !strings.Contains(acc, "(aid "+tc.want+" not null,") {
				t.Errorf("scale %d partitions %d: accounts aid is not %s: %s", tc.scale, parts, tc.want, acc)
			}
		}
	}
}

func TestCreateStatementsFillfactor(t *testing.T) {
	for _, parts := range []int{0, 3} {
		stmts := createStatements(1, 100, parts, "range")
		for _, s := range stmts {
			if strings.Contains(s, "fillfactor") {
				t.Errorf("fillfactor 100 (the default) should add no storage parameter: %s", s)
			}
		}
		stmts = createStatements(1, 85, parts, "hash")
		for _, s := range stmts {
			has := strings.HasSuffix(s, " with (fillfactor=85)")
			switch {
			case strings.HasPrefix(s, "create table pgbench_history "):
				if has {
					t.Errorf("history is append-only; pgbench gives it no fillfactor: %s", s)
				}
			case strings.Contains(s, "partition by"):
				// PostgreSQL refuses storage parameters on a partitioned table.
				if strings.Contains(s, "fillfactor") {
					t.Errorf("partitioned parent must not carry fillfactor: %s", s)
				}
			default:
				if !has {
					t.Errorf("partitions %d: want fillfactor=85 on %s", parts, s)
				}
			}
		}
	}
}

func TestCreateStatementsTables(t *testing.T) {
	stmts := createStatements(1, 100, 0, "range")
	if len(stmts) != 4 {
		t.Fatalf("want 4 statements without partitions, got %d: %q", len(stmts), stmts)
	}
	for _, want := range []string{
		"filler char(22)", // history
		"tbalance int, filler char(84)",
		"bbalance int, filler char(88)",
		"abalance int, filler char(84)",
	} {
		if !strings.Contains(strings.Join(stmts, ";"), want) {
			t.Errorf("no statement has %q (pgbench's column sizes): %q", want, stmts)
		}
	}
}

var rangeBound = regexp.MustCompile(`^create table pgbench_accounts_(\d+) partition of pgbench_accounts for values from \((\w+)\) to \((\w+)\)`)

// TestCreateStatementsRangeBounds checks that every aid 1..N falls in exactly
// one range partition, that the partitions are contiguous and balanced as
// pgbench makes them, and that nothing is left outside.
func TestCreateStatementsRangeBounds(t *testing.T) {
	for _, tc := range []struct{ scale, parts int }{
		{1, 1}, {1, 2}, {1, 3}, {1, 7}, {2, 3}, {3, 10}, {1, 64}, {BigintScale, 3},
	} {
		t.Run(fmt.Sprintf("scale%d_p%d", tc.scale, tc.parts), func(t *testing.T) {
			stmts := createStatements(tc.scale, 100, tc.parts, "range")
			n := int64(tc.scale) * AccountsPerScale
			type bound struct{ lo, hi int64 } // [lo, hi); lo=min, hi=max for minvalue/maxvalue
			var bounds []bound
			for _, s := range stmts {
				if !strings.Contains(s, "partition of") {
					continue
				}
				m := rangeBound.FindStringSubmatch(s)
				if m == nil {
					t.Fatalf("unexpected partition statement: %s", s)
				}
				if p, _ := strconv.Atoi(m[1]); p != len(bounds)+1 {
					t.Fatalf("partition %s out of order (want %d)", m[1], len(bounds)+1)
				}
				parse := func(v string, inf int64) int64 {
					switch v {
					case "minvalue", "maxvalue":
						return inf
					}
					x, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("bad bound %q in %s", v, s)
					}
					return x
				}
				bounds = append(bounds, bound{parse(m[2], -1<<62), parse(m[3], 1<<62)})
			}
			if len(bounds) != tc.parts {
				t.Fatalf("want %d partitions, got %d", tc.parts, len(bounds))
			}
			if bounds[0].lo > 1 || bounds[len(bounds)-1].hi <= n {
				t.Fatalf("partitions do not cover 1..%d: first %+v last %+v", n, bounds[0], bounds[len(bounds)-1])
			}
			counts := make([]int64, len(bounds))
			for i, b := range bounds {
				if i > 0 && b.lo != bounds[i-1].hi {
					t.Fatalf("gap or overlap between partition %d (%+v) and %d (%+v)", i, bounds[i-1], i+1, b)
				}
				lo, hi := max(b.lo, 1), min(b.hi, n+1)
				if hi > lo {
					counts[i] = hi - lo
				}
			}
			var total int64
			part := (n + int64(tc.parts) - 1) / int64(tc.parts)
			for i, c := range counts {
				total += c
				if c > part {
					t.Errorf("partition %d holds %d accounts, more than ceil(N/P)=%d", i+1, c, part)
				}
				if i < len(counts)-1 && c != part {
					t.Errorf("partition %d holds %d accounts, want %d (pgbench's sizes)", i+1, c, part)
				}
			}
			if total != n {
				t.Fatalf("partitions hold %d of the %d accounts", total, n)
			}
		})
	}
}

func TestCreateStatementsHash(t *testing.T) {
	stmts := createStatements(1, 100, 4, "hash")
	var got []string
	for _, s := range stmts {
		if strings.Contains(s, "partition by") && !strings.HasSuffix(s, "partition by hash (aid)") {
			t.Errorf("parent: %s", s)
		}
		if strings.Contains(s, "partition of") {
			got = append(got, s[strings.Index(s, "for values"):])
		}
	}
	want := []string{
		"for values with (modulus 4, remainder 0)", "for values with (modulus 4, remainder 1)",
		"for values with (modulus 4, remainder 2)", "for values with (modulus 4, remainder 3)",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("hash bounds\n got %q\nwant %q", got, want)
	}
}

func TestRowFormats(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"branch 1", branchRow(nil, 1), "1\t0\t\\N\n"},
		{"branch 20000", branchRow(nil, 20000), "20000\t0\t\\N\n"},
		{"teller 1", tellerRow(nil, 1), "1\t1\t0\t\\N\n"},
		{"teller 10", tellerRow(nil, 10), "10\t1\t0\t\\N\n"},
		{"teller 11", tellerRow(nil, 11), "11\t2\t0\t\\N\n"},
		{"account 1", accountRow(nil, 1), "1\t1\t0\t\n"},
		{"account 100000", accountRow(nil, 100000), "100000\t1\t0\t\n"},
		{"account 100001", accountRow(nil, 100001), "100001\t2\t0\t\n"},
		{"account beyond int4", accountRow(nil, 3_000_000_000), "3000000000\t30000\t0\t\n"},
		{"appends", accountRow([]byte("x"), 5), "x5\t1\t0\t\n"},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	// The longest row of the largest scale pgbench accepts still fits maxRow.
	if n := len(accountRow(nil, int64(1<<31-1)*AccountsPerScale)); n > maxRow {
		t.Errorf("an account row can be %d bytes, more than maxRow %d", n, maxRow)
	}
}

// readAll drains a copyReader with buffers of the given size.
func readAll(t *testing.T, r io.Reader, bufSize int) string {
	t.Helper()
	var out bytes.Buffer
	buf := make([]byte, bufSize)
	for i := 0; ; i++ {
		if i > 1e7 {
			t.Fatal("reader never ends")
		}
		n, err := r.Read(buf)
		if n > len(buf) || n < 0 {
			t.Fatalf("Read returned n=%d for a %d-byte buffer", n, len(buf))
		}
		out.Write(buf[:n])
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCopyReaderRange(t *testing.T) {
	var want strings.Builder
	for i := int64(1); i <= 30; i++ {
		want.Write(tellerRow(nil, i))
	}
	for _, size := range []int{maxRow, maxRow + 7, 1000, 65536} {
		var cnt atomic.Int64
		r := &copyReader{src: &rangeRows{next: 1, end: 31, format: tellerRow}, counter: &cnt}
		if got := readAll(t, r, size); got != want.String() {
			t.Errorf("buffer %d: rows differ:\n got %q\nwant %q", size, got, want.String())
		}
		if cnt.Load() != 30 {
			t.Errorf("buffer %d: counted %d rows, want 30", size, cnt.Load())
		}
	}
	var cnt atomic.Int64
	r := &copyReader{src: &rangeRows{next: 1, end: 2, format: branchRow}, counter: &cnt}
	if _, err := r.Read(make([]byte, maxRow-1)); !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("a buffer shorter than a row: err = %v, want io.ErrShortBuffer", err)
	}
	// An empty range ends at once.
	r = &copyReader{src: &rangeRows{next: 1, end: 1, format: branchRow}, counter: &cnt}
	if got := readAll(t, r, 100); got != "" {
		t.Errorf("empty range wrote %q", got)
	}
}

// TestCopyReaderChunks: two streams sharing the chunk counter write every
// account of 3 scale units exactly once, with the right bid.
func TestCopyReaderChunks(t *testing.T) {
	const scale = 3
	var next atomic.Int64
	var cnt atomic.Int64
	a := &copyReader{src: &chunkRows{next: &next, chunks: scale}, counter: &cnt}
	b := &copyReader{src: &chunkRows{next: &next, chunks: scale}, counter: &cnt}
	// Interleave the two streams.
	var outA, outB bytes.Buffer
	buf := make([]byte, 4096)
	doneA, doneB := false, false
	for !doneA || !doneB {
		for _, s := range []struct {
			r    *copyReader
			out  *bytes.Buffer
			done *bool
		}{{a, &outA, &doneA}, {b, &outB, &doneB}} {
			if *s.done {
				continue
			}
			n, err := s.r.Read(buf)
			s.out.Write(buf[:n])
			if err == io.EOF {
				*s.done = true
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	seen := make([]bool, scale*AccountsPerScale+1)
	for _, out := range []string{outA.String(), outB.String()} {
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if line == "" {
				continue
			}
			f := strings.Split(line, "\t")
			if len(f) != 4 || f[2] != "0" || f[3] != "" {
				t.Fatalf("bad row %q", line)
			}
			aid, _ := strconv.ParseInt(f[0], 10, 64)
			bid, _ := strconv.ParseInt(f[1], 10, 64)
			if aid < 1 || aid > scale*AccountsPerScale {
				t.Fatalf("aid out of range: %q", line)
			}
			if seen[aid] {
				t.Fatalf("aid %d written twice", aid)
			}
			seen[aid] = true
			if want := (aid-1)/AccountsPerScale + 1; bid != want {
				t.Fatalf("aid %d has bid %d, want %d", aid, bid, want)
			}
		}
	}
	for aid := 1; aid < len(seen); aid++ {
		if !seen[aid] {
			t.Fatalf("aid %d never written", aid)
		}
	}
	if cnt.Load() != scale*AccountsPerScale {
		t.Errorf("counted %d rows, want %d", cnt.Load(), scale*AccountsPerScale)
	}
}
