package tpcc

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// drain runs a chunk's generator to the end and returns rows and bytes.
func drain(t testing.TB, table string, format string, wlo, whi int) (int64, int64) {
	src := &copySource{g: newGen(table, 42, Constants{CLast: 100}, wlo, whi), e: newEnc(format, time.Now())}
	buf := make([]byte, 65531)
	var bytes int64
	for {
		n, err := src.Read(buf)
		bytes += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return src.rows, bytes
}

func TestLoadGeneratorRowCounts(t *testing.T) {
	for _, table := range Tables {
		for _, f := range []string{FormatText, FormatBinary} {
			lo, hi := 1, 2
			if table == "item" {
				lo, hi = 0, 0
			}
			rows, _ := drain(t, table, f, lo, hi)
			if want := chunkRows(table, 42, lo, hi); rows != want {
				t.Errorf("%s (%s): %d rows, want %d", table, f, rows, want)
			}
		}
	}
}

func BenchmarkLoadGenerator(b *testing.B) {
	for _, f := range []string{FormatText, FormatBinary} {
		b.Run(f, func(b *testing.B) {
			var rows, bytes int64
			for i := 0; i < b.N; i++ {
				for _, table := range Tables {
					lo, hi := 1, 1
					if table == "item" {
						lo, hi = 0, 0
					}
					r, n := drain(b, table, f, lo, hi)
					rows += r
					bytes += n
				}
			}
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
			b.ReportMetric(float64(bytes)/float64(b.N)/1e6, "MB/op")
		})
	}
}

func TestAppendDecimal(t *testing.T) {
	for _, c := range []struct {
		v     int64
		scale int
		want  string
	}{
		{30000000, 2, "300000.00"}, {-1000, 2, "-10.00"}, {0, 2, "0.00"}, {1, 2, "0.01"},
		{2000, 4, "0.2000"}, {7, 4, "0.0007"}, {999999, 2, "9999.99"}, {42, 0, "42"},
	} {
		if got := string(appendDecimal(nil, c.v, c.scale)); got != c.want {
			t.Errorf("appendDecimal(%d, %d) = %q, want %q", c.v, c.scale, got, c.want)
		}
	}
}

// decodeNumeric reads PostgreSQL's binary numeric back into a string.
func decodeNumeric(t *testing.T, b []byte) string {
	t.Helper()
	be := func(i int) int { return int(int16(uint16(b[i])<<8 | uint16(b[i+1]))) }
	if n := int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])); n != len(b)-4 {
		t.Fatalf("length %d, have %d bytes", n, len(b)-4)
	}
	b = b[4:]
	ndigits, weight, sign, dscale := be(0), be(2), be(4), be(6)
	// value = sum(digit[i] * 10000^(weight-i))
	var intPart, frac int64
	for i := 0; i < ndigits; i++ {
		d := int64(be(8 + 2*i))
		if d < 0 || d >= 10000 {
			t.Fatalf("digit %d out of range", d)
		}
		switch e := weight - i; {
		case e >= 0:
			p := int64(1)
			for k := 0; k < e; k++ {
				p *= 10000
			}
			intPart += d * p
		case e == -1:
			frac = d
		default:
			t.Fatalf("weight %d too small", e)
		}
	}
	if ndigits > 0 && (be(8) == 0 || be(8+2*(ndigits-1)) == 0) {
		t.Errorf("not normalized: leading or trailing zero digit")
	}
	s := fmt.Sprint(intPart)
	if dscale > 0 {
		s += "." + fmt.Sprintf("%04d", frac)[:dscale]
	}
	if sign == 0x4000 {
		s = "-" + s
	}
	return s
}

func TestAppendNumericBinary(t *testing.T) {
	for _, c := range []struct {
		v     int64
		scale int
	}{{30000000, 2}, {-1000, 2}, {0, 2}, {0, 4}, {1, 2}, {2000, 4}, {5000, 4}, {7, 4}, {999999, 2}, {100000000, 2}, {12345678901, 2}, {100, 2}} {
		want := string(appendDecimal(nil, c.v, c.scale))
		if got := decodeNumeric(t, appendNumericBinary(nil, c.v, c.scale)); got != want {
			t.Errorf("binary numeric %d scale %d decodes to %s, want %s", c.v, c.scale, got, want)
		}
	}
}

func TestAppendAlnumUniform(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var counts [256]int
	const n = 620000
	b := appendAlnum(nil, r, n)
	if len(b) != n {
		t.Fatalf("%d characters, want %d", len(b), n)
	}
	for _, c := range b {
		counts[c]++
	}
	// chi-square over the 62 characters; 61 degrees of freedom, p=0.001 at 100.9.
	var chi float64
	for i := 0; i < len(alnum); i++ {
		d := float64(counts[alnum[i]] - n/62)
		chi += d * d / (n / 62)
	}
	var others int
	for c, k := range counts {
		if k > 0 && !strings.ContainsRune(alnum, rune(c)) {
			others++
		}
	}
	if chi > 100.9 || others > 0 {
		t.Errorf("chi-square %.1f (61 df), %d characters outside the alphabet", chi, others)
	}
	for _, k := range []int{0, 1, 5, 6, 7, 24} {
		if got := len(appendAlnum([]byte("x"), r, k)); got != k+1 {
			t.Errorf("appendAlnum(%d) appended %d", k, got-1)
		}
	}
}

func TestEncData(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	e := newEnc(FormatText, time.Now())
	orig := 0
	const n = 100000
	for i := 0; i < n; i++ {
		e.b = e.b[:0]
		e.row(1)
		e.data(r)
		s := string(e.b)
		if len(s) < 26 || len(s) > 50 {
			t.Fatalf("data of length %d", len(s))
		}
		if strings.Contains(s, "ORIGINAL") {
			orig++
		}
	}
	if f := float64(orig) / n; f < 0.097 || f > 0.103 {
		t.Errorf("ORIGINAL in %.4f of the rows, want 0.10", f)
	}
}

// TestGeneratorDeterministic: a chunk's rows depend only on the seed, not on
// how the warehouses are grouped into chunks.
func TestGeneratorDeterministic(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 0, time.Local)
	gen := func(table string, lo, hi int) []byte {
		src := &copySource{g: newGen(table, 99, Constants{CLast: 7}, lo, hi), e: newEnc(FormatText, ts)}
		var out []byte
		buf := make([]byte, 65531)
		for {
			n, err := src.Read(buf)
			out = append(out, buf[:n]...)
			if err == io.EOF {
				return out
			}
		}
	}
	for _, table := range []string{"customer", "orders", "order_line", "stock", "history"} {
		whole := gen(table, 1, 2)
		parts := append(gen(table, 1, 1), gen(table, 2, 2)...)
		if !bytes.Equal(whole, parts) {
			t.Errorf("%s: warehouses 1-2 in one chunk differ from two chunks", table)
		}
	}
}
