package answers

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
)

func TestScales(t *testing.T) {
	if got, want := Scales(), []float64{0.01, 0.1, 1}; !slices.Equal(got, want) {
		t.Fatalf("Scales() = %v, want %v", got, want)
	}
	for _, sf := range []float64{0.01, 0.1, 1, 0.1 + 1e-12, 3 * 0.1 / 3} {
		if _, ok := Reference(sf, 1); !ok {
			t.Errorf("Reference(%v, 1): none", sf)
		}
	}
	for _, c := range []struct {
		sf float64
		q  int
	}{{0.5, 1}, {10, 1}, {0, 1}, {1, 0}, {1, 23}, {0.011, 1}} {
		if _, ok := Reference(c.sf, c.q); ok {
			t.Errorf("Reference(%v, %d): have an answer, want none", c.sf, c.q)
		}
	}
}

func TestReferenceShape(t *testing.T) {
	names := map[int][]string{}
	for _, sf := range Scales() {
		for q := 1; q <= Queries; q++ {
			a, ok := Reference(sf, q)
			if !ok {
				t.Fatalf("SF %v Q%d: no reference answer", sf, q)
			}
			if len(a.Columns) != Columns(q) {
				t.Errorf("SF %v Q%d: %d columns %v, want %d", sf, q, len(a.Columns), a.Columns, Columns(q))
			}
			if len(a.Rows) == 0 {
				t.Errorf("SF %v Q%d: no rows", sf, q)
			}
			for i, r := range a.Rows {
				if len(r) != len(a.Columns) {
					t.Errorf("SF %v Q%d row %d: %d values, want %d", sf, q, i+1, len(r), len(a.Columns))
				}
			}
			if prev, ok := names[q]; ok && !slices.Equal(prev, a.Columns) {
				t.Errorf("SF %v Q%d: columns %v, other scales %v", sf, q, a.Columns, prev)
			}
			names[q] = a.Columns
		}
	}
	// Row counts of the TPC's SF 1 answers (Appendix C).
	want := []int{4, 100, 10, 5, 5, 1, 4, 2, 175, 20, 1048, 2, 42, 1, 1, 18314, 1, 57, 1, 186, 100, 7}
	for q := 1; q <= Queries; q++ {
		a, _ := Reference(1, q)
		if len(a.Rows) != want[q-1] {
			t.Errorf("SF 1 Q%d: %d rows, want %d", q, len(a.Rows), want[q-1])
		}
	}
}

func TestOfficialQ1(t *testing.T) {
	a, _ := Reference(1, 1)
	var no []string
	for _, r := range a.Rows {
		if r[0] == "N" && r[1] == "O" {
			no = r
		}
	}
	if no == nil {
		t.Fatalf("SF 1 Q1 has no N|O row: %v", a.Rows)
	}
	if no[9] != "2920374" || no[2] != "74476040.00" {
		t.Errorf("SF 1 Q1 N|O: count_order %s sum_qty %s, want 2920374 and 74476040.00", no[9], no[2])
	}
}

func TestReferenceIsACopy(t *testing.T) {
	a, _ := Reference(0.01, 1)
	a.Rows[0][0] = "changed"
	a.Columns[0] = "changed"
	b, _ := Reference(0.01, 1)
	if b.Rows[0][0] == "changed" || b.Columns[0] == "changed" {
		t.Fatal("Reference returned shared slices")
	}
}

func TestCompareSelf(t *testing.T) {
	for _, sf := range Scales() {
		for q := 1; q <= Queries; q++ {
			a, _ := Reference(sf, q)
			if err := Compare(q, a, a.Rows); err != nil {
				t.Errorf("SF %v: reference against itself: %v", sf, err)
			}
			// As PostgreSQL may send them: char(n) padded with blanks.
			padded := rows(a)
			for _, r := range padded {
				for k, cl := range columnClasses[q] {
					if cl == str {
						r[k] += "   "
					}
				}
			}
			if err := Compare(q, a, padded); err != nil {
				t.Errorf("SF %v: padded strings: %v", sf, err)
			}
		}
	}
}

// rows returns a copy of a's rows to modify.
func rows(a Answer) [][]string {
	return a.clone().Rows
}

func ref(t *testing.T, sf float64, q int) Answer {
	t.Helper()
	a, ok := Reference(sf, q)
	if !ok {
		t.Fatalf("no reference for SF %v Q%d", sf, q)
	}
	return a
}

// addCents returns v + cents/100 as text with two decimals.
func addCents(t *testing.T, v string, cents int64) string {
	t.Helper()
	r, ok := new(big.Rat).SetString(v)
	if !ok {
		t.Fatalf("not a number: %q", v)
	}
	r.Add(r, big.NewRat(cents, 100))
	return r.FloatString(2)
}

// scaled returns v·num/den as text with two decimals.
func scaled(t *testing.T, v string, num, den int64) string {
	t.Helper()
	r, ok := new(big.Rat).SetString(v)
	if !ok {
		t.Fatalf("not a number: %q", v)
	}
	return r.Mul(r, big.NewRat(num, den)).FloatString(2)
}

func mismatch(t *testing.T, err error) *MismatchError {
	t.Helper()
	var m *MismatchError
	if !errors.As(err, &m) {
		t.Fatalf("error %v (%T) is not a *MismatchError", err, err)
	}
	return m
}

func TestCompareSum(t *testing.T) {
	a := ref(t, 1, 3)
	for _, c := range []struct {
		cents int64
		ok    bool
	}{{9900, true}, {-9900, true}, {10000, true}, {-10000, true}, {10001, false}, {10100, false}, {-10100, false}} {
		got := rows(a)
		got[3][1] = addCents(t, got[3][1], c.cents)
		err := Compare(3, a, got)
		if (err == nil) != c.ok {
			t.Errorf("revenue off by %d cents: err = %v, want ok=%v", c.cents, err, c.ok)
		}
		if err != nil {
			m := mismatch(t, err)
			want := fmt.Sprintf("Q3 row 4 column revenue: expected %s (sum, within $100), got %s", a.Rows[3][1], got[3][1])
			if m.Row != 4 || m.Column != "revenue" || err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		}
	}
	// Q15's total_revenue is a sum too; Q1's sum_qty and Q18's sum(l_quantity) are exact.
	q15 := ref(t, 1, 15)
	got := rows(q15)
	got[0][4] = addCents(t, got[0][4], 9999)
	if err := Compare(15, q15, got); err != nil {
		t.Errorf("Q15 total_revenue +$99.99: %v", err)
	}
	for _, c := range []struct{ q, col int }{{1, 2}, {18, 5}} {
		a := ref(t, 1, c.q)
		got := rows(a)
		got[0][c.col] = addCents(t, got[0][c.col], 100)
		if err := Compare(c.q, a, got); err == nil {
			t.Errorf("Q%d %s off by 1: no error", c.q, a.Columns[c.col])
		}
		got[0][c.col] = strings.TrimSuffix(a.Rows[0][c.col], ".00")
		if err := Compare(c.q, a, got); err != nil {
			t.Errorf("Q%d %s as an integer: %v", c.q, a.Columns[c.col], err)
		}
	}
}

func TestCompareAvgAndRatio(t *testing.T) {
	a := ref(t, 1, 1) // avg_qty and avg_price (avg_disc, 0.05, is too small for 2% to survive the rounding)
	for col := 6; col <= 7; col++ {
		got := rows(a)
		got[0][col] = scaled(t, got[0][col], 102, 100)
		if err := Compare(1, a, got); err == nil {
			t.Errorf("Q1 %s +2%%: no error", a.Columns[col])
		}
		got[0][col] = scaled(t, a.Rows[0][col], 98, 100)
		if err := Compare(1, a, got); err == nil {
			t.Errorf("Q1 %s -2%%: no error", a.Columns[col])
		}
	}
	// Within 1% after rounding: 25.52 → 25.77 passes, 25.78 fails.
	got := rows(a)
	got[0][6] = "25.7749"
	if err := Compare(1, a, got); err != nil {
		t.Errorf("Q1 avg_qty 25.7749 for 25.52: %v", err)
	}
	got[0][6] = "25.776"
	if err := Compare(1, a, got); err == nil {
		t.Error("Q1 avg_qty 25.776 for 25.52: no error")
	}
	// PostgreSQL's unrounded numeric.
	got = rows(a)
	got[0][8] = "0.05000996100606"
	if err := Compare(1, a, got); err != nil {
		t.Errorf("Q1 avg_disc unrounded: %v", err)
	}
	// Q14 promo_revenue (rat) and Q17 avg_yearly (avg).
	for _, q := range []int{14, 17} {
		a := ref(t, 1, q)
		got := rows(a)
		got[0][0] = scaled(t, a.Rows[0][0], 102, 100)
		if err := Compare(q, a, got); err == nil {
			t.Errorf("Q%d +2%%: no error", q)
		}
		got[0][0] = scaled(t, a.Rows[0][0], 1005, 1000)
		if err := Compare(q, a, got); err != nil {
			t.Errorf("Q%d +0.5%%: %v", q, err)
		}
	}
}

func TestMatchSignsAndZero(t *testing.T) {
	for _, c := range []struct {
		cl         class
		want, have string
		ok         bool
	}{
		{avg, "-10.00", "-10.05", true},
		{avg, "-10.00", "-9.95", true},
		{avg, "-10.00", "-10.2", false},
		{avg, "-10.00", "-9.8", false},
		{avg, "-10.00", "10.00", false},
		{rat, "0.00", "0.004", true},
		{rat, "0.00", "-0.004", true},
		{rat, "0.00", "0.005", false},
		{rat, "0.03", "0.0349", true},
		{rat, "0.03", "0.035", false},
		{sum, "-5.00", "-105.00", true},
		{sum, "-5.00", "-105.01", false},
		{num, "9938.53", "9938.5300", true},
		{num, "9938.53", "9938.534", true},
		{num, "9938.53", "9938.54", false},
		{num, "13", "13", true},
		{cnt, "10594", "10595", false},
		{cnt, "10594", " 10594 ", true},
		{integer, "1995", "1995", true},
		{str, "1995-03-15", "1995-03-15", true},
		{str, " need to boost", "need to boost", false},
		{str, "MAIL", "MAIL      ", true},
		{avg, "", "", true},
		{avg, "", "NULL", true},
		{avg, "", "0.00", false},
		{avg, "1.00", "", false},
		{sum, "1.00", "abc", false},
		{sum, "1.00", "1/1", false},
	} {
		if ok, _ := match(c.cl, c.want, c.have); ok != c.ok {
			t.Errorf("%s: %q against %q: ok=%v, want %v", c.cl.rule(), c.have, c.want, ok, c.ok)
		}
	}
}

func TestCompareCounts(t *testing.T) {
	a := ref(t, 1, 12) // Q12's sums of 0/1 are counts
	got := rows(a)
	got[1][2] = fmt.Sprint(9262 + 1)
	err := Compare(12, a, got)
	if err == nil || !strings.Contains(err.Error(), "Q12 row 2 column low_line_count: expected 9262 (cnt, exact), got 9263") {
		t.Errorf("Q12 count off by one: %v", err)
	}
}

func TestCompareOrder(t *testing.T) {
	// Fully ordered: Q9 by nation, o_year desc.
	a := ref(t, 1, 9)
	got := rows(a)
	got[0], got[1] = got[1], got[0]
	err := Compare(9, a, got)
	if err == nil {
		t.Fatal("Q9 rows 1 and 2 swapped: no error")
	}
	if m := mismatch(t, err); m.Row != 1 || m.Column != "o_year" {
		t.Errorf("Q9 swapped: %v", err)
	}

	// Q11 is ordered by value only: swapping rows of different values fails ...
	a = ref(t, 1, 11)
	got = rows(a)
	got[3], got[4] = got[4], got[3]
	if err := Compare(11, a, got); err == nil {
		t.Error("Q11 rows 4 and 5 (different values) swapped: no error")
	}
	// ... rows that tie on value may come in any order.
	a.Rows[4][1] = a.Rows[3][1]
	a.Rows[5][1] = a.Rows[3][1]
	got = rows(a)
	got[3], got[4], got[5] = got[5], got[3], got[4]
	if err := Compare(11, a, got); err != nil {
		t.Errorf("Q11 tied rows 4-6 rotated: %v", err)
	}
	// A wrong value inside a tie group is still found, with its row.
	got[4][0] = "1"
	err = Compare(11, a, got)
	if err == nil {
		t.Fatal("Q11 wrong key in a tie group: no error")
	}
	if m := mismatch(t, err); m.Row < 4 || m.Row > 6 || m.Column != "ps_partkey" || !strings.Contains(m.Note, "rows 4-6 tie") {
		t.Errorf("Q11 wrong key in a tie group: %v", err)
	}

	// Q3 (revenue desc, o_orderdate): a tie needs both.
	a = ref(t, 1, 3)
	a.Rows[2][1] = a.Rows[1][1]
	got = rows(a)
	got[1], got[2] = got[2], got[1]
	if a.Rows[1][2] == a.Rows[2][2] {
		t.Fatal("test data: rows 2 and 3 have the same date")
	}
	if err := Compare(3, a, got); err == nil {
		t.Error("Q3 equal revenue, different dates, swapped: no error")
	}
	a.Rows[2][2] = a.Rows[1][2]
	got = rows(a)
	got[1], got[2] = got[2], got[1]
	if err := Compare(3, a, got); err != nil {
		t.Errorf("Q3 tied rows swapped: %v", err)
	}
}

func TestCompareRowCount(t *testing.T) {
	a := ref(t, 1, 3)
	// A row missing in the middle is reported where it is missing.
	got := append(rows(a)[:4:4], rows(a)[5:]...)
	err := Compare(3, a, got)
	if err == nil {
		t.Fatal("Q3 without row 5: no error")
	}
	m := mismatch(t, err)
	if m.Row != 5 || m.Column != "l_orderkey" || !strings.Contains(err.Error(), "9 rows, expected 10") {
		t.Errorf("Q3 without row 5: %v", err)
	}
	// The last row missing.
	err = Compare(3, a, rows(a)[:9])
	want := fmt.Sprintf("Q3 row 10 column l_orderkey: expected %s (int, exact), got no row; 9 rows, expected 10", a.Rows[9][0])
	if err == nil || err.Error() != want {
		t.Errorf("Q3 without its last row: %v, want %s", err, want)
	}
	// One row too many.
	err = Compare(3, a, append(rows(a), []string{"1", "2.00", "1995-01-01", "0"}))
	if m := mismatch(t, err); m.Row != 11 || m.Expected != noRow {
		t.Errorf("Q3 with an 11th row: %v", err)
	}
	// Nothing at all.
	if err := Compare(6, ref(t, 1, 6), nil); err == nil || !strings.Contains(err.Error(), "Q6 row 1 column revenue") {
		t.Errorf("Q6 with no rows: %v", err)
	}
	// A row with a wrong number of columns.
	got = rows(a)
	got[2] = got[2][:3]
	if err := Compare(3, a, got); err == nil || !strings.Contains(err.Error(), "Q3 row 3: expected 4 columns, got 3 columns") {
		t.Errorf("Q3 row 3 short: %v", err)
	}
	// A tie group that a missing row cuts short.
	a = ref(t, 1, 11)
	n := len(a.Rows)
	a.Rows[n-1][1] = a.Rows[n-2][1]
	if err := Compare(11, a, rows(a)[:n-1]); err == nil || mismatch(t, err).Row != n {
		t.Errorf("Q11 without its last (tied) row: %v", err)
	}
}

func TestCompareBadInput(t *testing.T) {
	a := ref(t, 1, 1)
	if err := Compare(0, a, a.Rows); err == nil {
		t.Error("Q0: no error")
	}
	if err := Compare(2, a, a.Rows); err == nil || !strings.Contains(err.Error(), "columns") {
		t.Errorf("Q1's answer as Q2's: %v", err)
	}
	got := rows(a)
	got[0][3] = "lots"
	err := Compare(1, a, got)
	if err == nil || !strings.Contains(err.Error(), "got lots; not a number") {
		t.Errorf("non-numeric sum: %v", err)
	}
	// Wrapped, the error is still a *MismatchError.
	wrapped := fmt.Errorf("stream 0: %w", err)
	if m := mismatch(t, wrapped); m.Query != 1 || m.Row != 1 {
		t.Errorf("wrapped: %+v", m)
	}
}

func TestCompareNull(t *testing.T) {
	a := ref(t, 0.01, 17) // no qualifying line items at SF 0.01: NULL
	if len(a.Rows) != 1 || a.Rows[0][0] != "" {
		t.Fatalf("SF 0.01 Q17 = %v, want one NULL", a.Rows)
	}
	for _, v := range []string{"", "NULL"} {
		if err := Compare(17, a, [][]string{{v}}); err != nil {
			t.Errorf("NULL as %q: %v", v, err)
		}
	}
	if err := Compare(17, a, [][]string{{"0.00"}}); err == nil || !strings.Contains(err.Error(), "expected NULL") {
		t.Errorf("0.00 for NULL: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	good := "# c\n"
	for q := 1; q <= Queries; q++ {
		good += fmt.Sprintf("Q%d|1\na|b\n1|\n", q)
	}
	if _, err := parse(good); err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, bad := range []string{
		"",
		strings.Replace(good, "Q3|1", "Q4|1", 1),
		strings.Replace(good, "Q3|1", "Q3|x", 1),
		strings.Replace(good, "Q22|1", "Q22|2", 1),
		good + "extra\n",
		strings.Replace(good, "1|\nQ2", "1\nQ2", 1),
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse accepted %.40q...", bad)
		}
	}
}
