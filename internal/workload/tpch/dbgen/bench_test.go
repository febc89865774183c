package dbgen

import "testing"

// BenchmarkLineitem reports the generator's speed on lineitem, the table
// that is three quarters of the data: go test -bench Lineitem -run '^$'.
func BenchmarkLineitem(b *testing.B) {
	g := New(1, COPY)
	var buf []byte
	var rows int64
	b.ResetTimer()
	for i := range b.N {
		var n int64
		buf, n = g.Append(buf[:0], Lineitem, int64(i%1000)*1000, 1000)
		rows += n
		b.SetBytes(int64(len(buf)))
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
