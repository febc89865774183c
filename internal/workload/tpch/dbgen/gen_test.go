package dbgen

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The fixtures in testdata/sf0.01 are the first rows of each table as the
// reference generator writes them at SF 0.01 (tpchgen-cli 4.0.0, whose output
// is byte-identical to dbgen's; region, nation and supplier whole).
func TestFirstRowsMatchReference(t *testing.T) {
	g := New(0.01, TBL)
	for _, tb := range Tables() {
		t.Run(tb.String(), func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", "sf0.01", tb.String()+".tbl"))
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.Count(want, []byte("\n"))
			got, _ := g.Append(nil, tb, 0, Units(tb, 0.01))
			got = firstLines(got, lines)
			compareLines(t, tb.String(), got, want)
		})
	}
}

func firstLines(b []byte, n int) []byte {
	i := 0
	for ; n > 0 && i < len(b); n-- {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return b
		}
		i += j + 1
	}
	return b[:i]
}

// compareLines fails at the first line that differs, naming it.
func compareLines(t *testing.T, name string, got, want []byte) {
	t.Helper()
	gs, ws := bufio.NewScanner(bytes.NewReader(got)), bufio.NewScanner(bytes.NewReader(want))
	gs.Buffer(nil, 1<<20)
	ws.Buffer(nil, 1<<20)
	line := 0
	for {
		line++
		g, w := gs.Scan(), ws.Scan()
		if !g && !w {
			return
		}
		if g != w {
			t.Fatalf("%s: line %d: generated %v lines, reference %v", name, line, g, w)
		}
		if gs.Text() != ws.Text() {
			t.Fatalf("%s: line %d differs:\n got  %s\n want %s", name, line, gs.Text(), ws.Text())
		}
	}
}
